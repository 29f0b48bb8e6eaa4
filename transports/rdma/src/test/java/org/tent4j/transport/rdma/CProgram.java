package org.tent4j.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Compiles and runs a small C program against the installed verbs.h; its output is "key value" lines. */
final class CProgram {
    static final Path VERBS_H = Path.of("/usr/include/infiniband/verbs.h");

    private CProgram() {
    }

    /** Skips the calling test when gcc or the header is missing (they are present on the project's build machine). */
    static void assumeToolchain() {
        assumeTrue(Files.exists(VERBS_H), "no " + VERBS_H + " (apt-get install libibverbs-dev)");
        assumeTrue(onPath("gcc"), "no gcc on PATH");
    }

    static Map<String, String> run(Path dir, String source) throws IOException, InterruptedException {
        Path c = dir.resolve("probe.c");
        Path exe = dir.resolve("probe");
        Files.writeString(c, source);
        String compiled = exec(dir, List.of("gcc", "-std=gnu11", "-Wall", "-o", exe.toString(), c.toString()));
        String out = exec(dir, List.of(exe.toString()));
        Map<String, String> values = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            int sp = line.lastIndexOf(' ');
            values.put(line.substring(0, sp), line.substring(sp + 1));
        }
        assertEquals("", compiled.strip(), "gcc warnings");
        return values;
    }

    private static String exec(Path dir, List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(cmd + " did not finish");
        }
        String text = new String(out, StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new IOException(cmd + " exited " + p.exitValue() + ":\n" + text);
        }
        return text;
    }

    private static boolean onPath(String tool) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String d : path.split(":")) {
            if (Files.isExecutable(Path.of(d, tool))) {
                return true;
            }
        }
        return false;
    }
}
