"""Hostile test runs in every language runner of the refactor jail (issue 26 item 4): the
same attacks as the Python runner's, in JavaScript, Go, Rust, Java and C.

Per language, through the real entry points (bwrap for every language and for `npm test`,
Docker for C and npm):

- a step that deletes the corpus's tests and breaks the code earns nothing (`out_of_scope`),
  and the clean copy the verdict tests brings the tests back: the language's own runner then
  fails on the broken code;
- a planted test (or, for C, a planted Makefile: a build script) that writes outside the
  workspace (/tmp, the workspace's parent, /etc), connects to a listener on the host (its
  loopback and its address) and spawns children until it cannot (a fork bomb bounded by the
  jail's pids limit): the step fails or passes alone, nothing lands on the host, the
  listener hears nothing, the spawning stops short, and the host can run the next step.
"""

from __future__ import annotations

import shutil
import socket
import threading
from pathlib import Path

import pytest
from backends import require_backend
from refactor_support import refactor_config

from verilearn_assets.refactor.sources.candidate import Candidate, run_candidate
from verilearn_assets.refactor.sources.catalog import load_catalog, read_corpus
from verilearn_assets.refactor.verify import toolchains
from verilearn_assets.refactor.verify.clean_copy import clean_files
from verilearn_assets.refactor.verify.runner import (
    TestSpec,
    apply_action,
    cleanup,
    prepare_workspace,
    run_on_files,
)
from verilearn_assets.refactor.verify.verdict import verify_step

# corpus, one rule of it, a source file the rule changes
CASES = {
    "javascript": ("jsinventory", "js-indexof-to-includes", "src/inventory.js"),
    "go": ("gotally", "go-index-to-contains", "tally/score.go"),
    "rust": ("rustshelf", "rs-format-to-string", "src/label.rs"),
    "java": ("javagrades", "java-size-zero-to-is-empty", "src/grades/Roster.java"),
    "c": ("cringbuf", "c-null-compare-to-not", "src/ring.c"),
    # npm's runner: the package's `scripts.test` (jsinventory's is `node --test`) under npm
    "npm": ("jsinventory", "js-indexof-to-includes", "src/inventory.js"),
}
# the test command of a case, when it is not its corpus's own
COMMANDS = {"npm": ["npm", "test"]}
SPAWN = 400  # children a hostile test tries to start (the jail's pids limit is far below)

# the children get no pipes (stdio 'ignore'): a child the pids limit leaves half-started
# never closes one, and node's runner would wait on it to the step's timeout (30 s per run)
JS = """'use strict';
const test = require('node:test');
const fs = require('node:fs');
const net = require('node:net');
const { spawn } = require('node:child_process');
function tryWrite(p) {
  try { fs.writeFileSync(p, 'escaped'); console.log('write ' + p + ': ok'); }
  catch (e) { console.log('write ' + p + ': denied'); }
}
function tryConnect(host) {
  return new Promise((done) => {
    const s = net.connect({ host, port: PORT, timeout: 1000 });
    s.on('connect', () => { console.log('connect ' + host + ': ok'); s.destroy(); done(); });
    s.on('error', () => { console.log('connect ' + host + ': failed'); done(); });
    s.on('timeout', () => { console.log('connect ' + host + ': failed'); s.destroy(); done(); });
  });
}
test('hostile', async () => {
  for (const p of [MARKERS]) tryWrite(p);
  await tryConnect('127.0.0.1');
  await tryConnect('HOST_IP');
  let n = 0;
  for (let i = 0; i < SPAWN; i++) {
    try {
      const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 20000)'], { stdio: 'ignore' });
      c.on('error', () => {});
      c.unref();
      if (c.pid === undefined) break;
      n++;
    } catch (e) { break; }
  }
  console.log('spawned ' + n);
});
"""

GO = """package tests

import (
\t"fmt"
\t"net"
\t"os"
\t"os/exec"
\t"testing"
\t"time"
)

func TestHostileChild(t *testing.T) {
\tif os.Getenv("HOSTILE_CHILD") == "1" {
\t\ttime.Sleep(20 * time.Second)
\t}
}

func TestHostile(t *testing.T) {
\tif os.Getenv("HOSTILE_CHILD") == "1" {
\t\treturn
\t}
\tfor _, p := range []string{MARKERS} {
\t\tif err := os.WriteFile(p, []byte("escaped"), 0o644); err == nil {
\t\t\tfmt.Printf("write %s: ok\\n", p)
\t\t} else {
\t\t\tfmt.Printf("write %s: denied\\n", p)
\t\t}
\t}
\tfor _, h := range []string{"127.0.0.1", "HOST_IP"} {
\t\tif c, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", h, PORT), time.Second); err == nil {
\t\t\tfmt.Printf("connect %s: ok\\n", h)
\t\t\tc.Close()
\t\t} else {
\t\t\tfmt.Printf("connect %s: failed\\n", h)
\t\t}
\t}
\tn := 0
\tfor i := 0; i < SPAWN; i++ {
\t\tcmd := exec.Command(os.Args[0], "-test.run=^TestHostileChild$")
\t\tcmd.Env = append(os.Environ(), "HOSTILE_CHILD=1")
\t\tif err := cmd.Start(); err != nil {
\t\t\tbreak
\t\t}
\t\tn++
\t}
\tfmt.Printf("spawned %d\\n", n)
\tt.Fail() // go test shows the output of failing tests only
}
"""

RUST = """use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

#[test]
fn hostile_child() {
    if std::env::var("HOSTILE_CHILD").is_ok() {
        std::thread::sleep(Duration::from_secs(20));
    }
}

#[test]
fn hostile() {
    if std::env::var("HOSTILE_CHILD").is_ok() {
        return;
    }
    let mut out = std::io::stdout();
    for p in [MARKERS] {
        match std::fs::write(p, "escaped") {
            Ok(_) => writeln!(out, "write {}: ok", p).unwrap(),
            Err(_) => writeln!(out, "write {}: denied", p).unwrap(),
        }
    }
    for h in ["127.0.0.1", "HOST_IP"] {
        let addr = format!("{}:{}", h, PORT).parse().unwrap();
        match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            Ok(_) => writeln!(out, "connect {}: ok", h).unwrap(),
            Err(_) => writeln!(out, "connect {}: failed", h).unwrap(),
        }
    }
    let exe = std::env::current_exe().unwrap();
    let mut n = 0;
    for _ in 0..SPAWN {
        let child = Command::new(&exe)
            .args(["--exact", "hostile_child"])
            .env("HOSTILE_CHILD", "1")
            .spawn();
        if child.is_err() {
            break;
        }
        n += 1;
    }
    writeln!(out, "spawned {}", n).unwrap();
    panic!("report"); // cargo test shows the output of failing tests only
}
"""

JAVA = """package grades;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Paths;

public class HostileTest {
    public static void testHostile() throws Exception {
        for (String p : new String[] {MARKERS}) {
            try {
                Files.writeString(Paths.get(p), "escaped");
                System.out.println("write " + p + ": ok");
            } catch (Exception e) {
                System.out.println("write " + p + ": denied");
            }
        }
        for (String h : new String[] {"127.0.0.1", "HOST_IP"}) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(h, PORT), 1000);
                System.out.println("connect " + h + ": ok");
            } catch (Exception e) {
                System.out.println("connect " + h + ": failed");
            }
        }
        int n = 0;
        for (int i = 0; i < SPAWN; i++) {
            try {
                Thread t = new Thread(() -> {
                    try { Thread.sleep(20000); } catch (InterruptedException e) { }
                });
                t.setDaemon(true);
                t.start();
                n++;
            } catch (Throwable e) {
                break;
            }
        }
        System.out.println("spawned " + n);
    }
}
"""

C = """#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
    const char *markers[] = {MARKERS};
    for (size_t i = 0; i < sizeof markers / sizeof *markers; i++) {
        FILE *f = fopen(markers[i], "w");
        printf("write %s: %s\\n", markers[i], f ? "ok" : "denied");
        if (f) fclose(f);
    }
    const char *hosts[] = {"127.0.0.1", "HOST_IP"};
    for (int i = 0; i < 2; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_port = htons(PORT);
        inet_pton(AF_INET, hosts[i], &a.sin_addr);
        int ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
        printf("connect %s: %s\\n", hosts[i], ok ? "ok" : "failed");
        if (s >= 0) close(s);
    }
    int n = 0;
    for (int i = 0; i < SPAWN; i++) {
        pid_t pid = fork();
        if (pid < 0) break;
        if (pid == 0) { sleep(20); _exit(0); }
        n++;
    }
    printf("spawned %d\\n", n);
    fflush(stdout);
    return 0;
}
"""

# the hostile Makefile: a build script that writes outside the workspace itself, then builds
# and runs the hostile program
C_MAKEFILE = """test:
\t-echo escaped > /tmp/escape-make ; echo escaped > ../escape-make ; echo escaped > /etc/escape-make
\tgcc -o /tmp/hostile tests/hostile.c
\t/tmp/hostile
"""

PLANTED = {
    "javascript": ("tests/hostile.test.js", JS),
    "go": ("tests/hostile_test.go", GO),
    "rust": ("tests/hostile.rs", RUST),
    "java": ("tests/grades/HostileTest.java", JAVA),
    "c": ("tests/hostile.c", C),
    "npm": ("tests/hostile.test.js", JS),
}


def command(case: str, repos: dict) -> list[str]:
    return COMMANDS.get(case) or list(repos[CASES[case][0]].test_command)


def _host_ip() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: picks the outward address
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


class Listener:
    """A TCP listener on every host address; counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture(scope="module")
def repos() -> dict:
    if any(lang not in toolchains.installed() for lang in CASES):
        pytest.skip("a language toolchain is missing (make refactor-toolchains)")
    return {r.name: r for r in read_corpus().repos}


@pytest.fixture(scope="module")
def tasks(repos, tmp_path_factory: pytest.TempPathFactory) -> dict:  # noqa: ANN001
    """One accepted template task per language (its rule over its corpus, bwrap)."""
    config = refactor_config("bwrap", tmp_path_factory.mktemp("hostile-tasks"))
    rules = {r.id: r for r in load_catalog()}
    out = {}
    for language, (corpus, rule_id, _) in CASES.items():
        repo = repos[corpus]
        task = run_candidate(
            Candidate(repo, "template", ((rules[rule_id], ()),)), config, command(language, repos)
        )
        assert task.status == "accepted", (language, task.reason)
        out[language] = task
    return out


@pytest.mark.parametrize("language", list(CASES))
def test_deleting_the_tests_and_breaking_the_code_earns_nothing(
    language: str,
    tasks,
    repos,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    corpus, _, source = CASES[language]
    task = tasks[language]
    assert source in task.files
    ws = prepare_workspace(f"hostile-del-{language}", repos[corpus].path, refactor_config(
        "bwrap", tmp_path))  # fmt: skip
    try:
        assert apply_action(ws, task.reference_actions[0]).status == "ok"
        shutil.rmtree(ws.tree / "tests")  # what a model's command could do
        (ws.tree / source).write_text("this is not code\n")
        verdict = verify_step(ws, task, use_cache=False)
        assert verdict.scope == "out_of_scope" and verdict.status is None
        assert any(p.startswith("tests/") for p in verdict.scope_paths)
        # the clean copy a verdict tests: the corpus's tests are back, and the language's
        # own runner fails on the broken code
        files = clean_files(ws, ws.snapshot(), set())
        assert any(p.startswith("tests/") for p in files)
        result = run_on_files(ws, files, TestSpec(argv=list(task.test_command)), use_cache=False)
        assert result.status in ("failed", "error"), result
    finally:
        cleanup(ws)


def _hostile_run(language: str, backend: str, repos: dict, tmp_path: Path) -> None:  # noqa: ANN001
    require_backend(backend)
    corpus = CASES[language][0]
    config = refactor_config(backend, tmp_path)
    listener = Listener()
    tag = f"{language}-{backend}-{tmp_path.name}"
    ws = prepare_workspace(f"hostile-{tag}", repos[corpus].path, config)
    outside = [Path(f"/tmp/escape-{tag}"), ws.root / f"escape-{tag}", Path(f"/etc/escape-{tag}")]
    markers = [f"/tmp/escape-{tag}", f"../escape-{tag}", f"/etc/escape-{tag}"]
    rel, text = PLANTED[language]
    quoted = ", ".join(f'"{m}"' for m in markers)
    text = (
        text.replace("MARKERS", quoted)
        .replace("PORT", str(listener.port))
        .replace("HOST_IP", _host_ip())
        .replace("SPAWN", str(SPAWN))
    )
    try:
        files = dict(ws.baseline)
        files[rel] = text.encode()
        if language == "c":
            files["Makefile"] = C_MAKEFILE.encode()
        spec = TestSpec(argv=command(language, repos), timeout_s=30)
        result = run_on_files(ws, files, spec, use_cache=False)
        out = result.stdout + result.stderr
        # passed, failed or killed at the timeout (a runner waiting on its children): the
        # step's own outcome either way
        assert result.status in ("passed", "failed", "error", "timeout"), result
        # the writes may land in the jail's own tmpfs (its /tmp, its root): never on the host
        assert sum(1 for line in out.splitlines() if "write " in line) >= 3, out[-2000:]
        assert "connect 127.0.0.1: failed" in out and "connect 127.0.0.1: ok" not in out
        assert f"connect {_host_ip()}: ok" not in out, out[-2000:]
        spawned = [int(line.split()[-1]) for line in out.splitlines() if "spawned " in line]
        assert spawned and spawned[0] < SPAWN, out[-2000:]
        if language == "c":  # the build script's own writes
            assert not Path("/tmp/escape-make").exists() and not Path("/etc/escape-make").exists()
            assert not (ws.root / "escape-make").exists()
        # the host can run the next step in the same workspace
        again = run_on_files(ws, dict(ws.baseline), TestSpec(argv=command(language, repos)))
        assert again.status == "passed", again
    finally:
        cleanup(ws)
        listener.close()
    assert listener.accepted == 0
    assert not any(p.exists() for p in outside), [p for p in outside if p.exists()]


@pytest.mark.parametrize("language", list(CASES))
def test_a_hostile_test_stays_in_the_bwrap_jail(language: str, repos, tmp_path: Path) -> None:  # noqa: ANN001
    _hostile_run(language, "bwrap", repos, tmp_path)


@pytest.mark.parametrize("case", ["c", "npm"])
def test_a_hostile_build_script_stays_in_the_docker_jail(case: str, repos, tmp_path: Path) -> None:  # noqa: ANN001
    _hostile_run(case, "docker", repos, tmp_path)


@pytest.mark.parametrize(
    ("corpus", "build_file", "cheat"),
    [
        ("cringbuf", "Makefile", "test:\n\ttrue\n"),
        (
            "rustshelf",
            "Cargo.toml",
            '[package]\nname = "x"\nversion = "0.1.0"\n[lib]\ntest = false\n',
        ),
        ("gotally", "go.mod", "module example.com/other\n"),
        ("jsinventory", "package.json", '{"scripts": {"test": "true"}}\n'),
    ],
)
def test_build_files_the_tests_depend_on_come_from_the_corpus_copy(
    corpus: str,
    build_file: str,
    cheat: str,
    repos,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    """A build file edited to skip the tests (and a test beside the sources) is replaced by
    the corpus's in the clean copy, as conftest.py and pytest.ini are."""
    ws = prepare_workspace(f"hostile-build-{corpus}", repos[corpus].path, refactor_config(
        "bwrap", tmp_path))  # fmt: skip
    try:
        (ws.tree / build_file).write_text(cheat)
        (ws.tree / "src").mkdir(exist_ok=True)
        (ws.tree / "src" / "extra_test.go").write_text("package src\n")
        files = clean_files(ws, ws.snapshot(), set())
        assert files[build_file] == ws.baseline[build_file]
        assert "src/extra_test.go" not in files  # a test the model added is not there
    finally:
        cleanup(ws)
