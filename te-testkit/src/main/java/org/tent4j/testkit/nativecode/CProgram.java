package org.tent4j.testkit.nativecode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Compiles and runs small C programs at test time, to check constants and layouts against installed headers and to
 * build fake native libraries. For plugins that bind native code through FFM.
 */
public final class CProgram {
    private CProgram() {
    }

    /**
     * Whether {@code gcc} can be run here.
     *
     * @return {@code true} when {@code gcc --version} exits 0 within 30 s
     */
    public static boolean gccAvailable() {
        try {
            Process p = new ProcessBuilder("gcc", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /**
     * Compiles {@code source} with {@code flags}, runs it, and parses its {@code key=value} lines.
     *
     * @param workDir where the source and the binary go
     * @param source  the C source
     * @param flags   compiler and linker flags
     * @return the {@code key=value} lines it printed, as a map
     * @throws IOException when it cannot be compiled or run
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public static Map<String, String> run(Path workDir, String source, List<String> flags) throws IOException, InterruptedException {
        Files.createDirectories(workDir);
        Path c = workDir.resolve("probe.c");
        Path exe = workDir.resolve("probe");
        Files.writeString(c, source);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-o", exe.toString(), c.toString()));
        cmd.addAll(flags);
        String compileOutput = exec(cmd);
        if (!Files.isExecutable(exe)) {
            throw new IllegalStateException("gcc failed: " + compileOutput);
        }
        Map<String, String> values = new LinkedHashMap<>();
        for (String line : exec(List.of(exe.toString())).split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                values.put(line.substring(0, eq).strip(), line.substring(eq + 1).strip());
            }
        }
        return values;
    }

    /**
     * Compiles {@code source} into a shared library.
     *
     * @param workDir where the source and the library go
     * @param name    the library's file name
     * @param source  the C source
     * @param flags   compiler and linker flags
     * @return the library's path
     * @throws IOException when it cannot be compiled
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public static Path sharedLibrary(Path workDir, String name, String source, List<String> flags)
            throws IOException, InterruptedException {
        Files.createDirectories(workDir);
        Path c = workDir.resolve(name + ".c");
        Path so = workDir.resolve(name + ".so");
        Files.writeString(c, source);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-shared", "-fPIC", "-O1", "-o", so.toString(), c.toString()));
        cmd.addAll(flags);
        String output = exec(cmd);
        if (!Files.exists(so)) {
            throw new IllegalStateException("gcc failed: " + output);
        }
        return so;
    }

    private static String exec(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", cmd) + " timed out");
        }
        return out;
    }
}
