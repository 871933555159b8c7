// The Java test runner of the refactor jail (no JUnit: nothing is downloaded).
// Compiles every .java file under the working directory (dot directories skipped) into
// a scratch directory with the JDK's own compiler, then runs every public static
// no-argument method named test* of every class whose name ends in "Test": a method
// passes when it returns, fails when it throws. Prints "N passed, M failed" and exits 1
// on any failure or compile error (the runner's exit code is the verdict).
import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

public class JavaTest {
    public static void main(String[] args) throws Exception {
        Path root = Paths.get(".").toAbsolutePath().normalize();
        List<Path> sources;
        try (Stream<Path> walk = Files.walk(root)) {
            sources = walk.filter(p -> p.toString().endsWith(".java"))
                .filter(p -> root.relativize(p).toString().split(File.separator)[0].charAt(0) != '.')
                .sorted().collect(Collectors.toList());
        }
        if (sources.isEmpty()) {
            System.out.println("no .java files");
            System.exit(1);
        }
        // the scratch classes go with the run: outside a jail /tmp is the host's
        Path out = Files.createTempDirectory("javatest-classes");
        int code;
        try {
            code = run(sources, out);
        } finally {
            try (Stream<Path> walk = Files.walk(out)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) {
                    Files.deleteIfExists(p);
                }
            }
        }
        System.exit(code);
    }

    static int run(List<Path> sources, Path out) throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        List<String> argv = new ArrayList<>(Arrays.asList("-d", out.toString(), "-nowarn", "-proc:none"));
        for (Path p : sources) argv.add(p.toString());
        if (javac.run(null, null, null, argv.toArray(new String[0])) != 0) {
            System.out.println("compilation failed");
            return 1;
        }
        int passed = 0, failed = 0;
        try (URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()});
             Stream<Path> walk = Files.walk(out)) {
            List<String> classes = walk.map(p -> out.relativize(p).toString())
                .filter(n -> n.endsWith("Test.class"))
                .map(n -> n.substring(0, n.length() - 6).replace(File.separatorChar, '.'))
                .sorted().collect(Collectors.toList());
            for (String name : classes) {
                Class<?> cls = loader.loadClass(name);
                Method[] methods = cls.getDeclaredMethods();
                Arrays.sort(methods, Comparator.comparing(Method::getName));
                for (Method m : methods) {
                    int mod = m.getModifiers();
                    if (!m.getName().startsWith("test") || !Modifier.isStatic(mod)
                        || !Modifier.isPublic(mod) || m.getParameterCount() != 0) continue;
                    try {
                        m.invoke(null);
                        passed++;
                    } catch (InvocationTargetException e) {
                        failed++;
                        System.out.println("FAILED " + name + "." + m.getName() + ": " + e.getCause());
                    }
                }
            }
        }
        System.out.println(passed + " passed, " + failed + " failed");
        return failed == 0 && passed > 0 ? 0 : 1;
    }
}
