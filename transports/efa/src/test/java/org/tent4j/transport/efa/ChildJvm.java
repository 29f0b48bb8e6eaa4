package org.tent4j.transport.efa;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A second JVM (same java binary, same class path, native access enabled) running a main class of the test sources.
 * Lines it prints with {@link #PREFIX} are its protocol; everything else (and stderr) is copied to this JVM's stderr.
 */
final class ChildJvm implements AutoCloseable {
    static final String PREFIX = "EFA-CHILD ";
    private static final String EOF = "\u0000eof";

    private final Process process;
    private final PrintWriter in;
    private final BlockingQueue<String> lines = new ArrayBlockingQueue<>(1024);

    ChildJvm(Class<?> main, Map<String, String> env, String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m",
                "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().putAll(env);
        process = pb.start();
        in = new PrintWriter(process.outputWriter(StandardCharsets.UTF_8), true);
        Thread.ofPlatform().daemon().name("child-stdout").start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith(PREFIX)) {
                        lines.put(line.substring(PREFIX.length()));
                    } else {
                        System.err.println("[child] " + line);
                    }
                }
            } catch (IOException | InterruptedException ignored) {
                // the child went away; next() reports it
            }
            lines.offer(EOF);
        });
    }

    /** The next protocol line; fails if the child exits or stays silent for {@code seconds}. */
    String next(int seconds) throws InterruptedException {
        String line = lines.poll(seconds, TimeUnit.SECONDS);
        if (line == null) {
            throw new AssertionError("the child JVM said nothing for " + seconds + " s");
        }
        if (line.equals(EOF)) {
            throw new AssertionError("the child JVM closed its output (exit " + exitCode(5) + ")");
        }
        return line;
    }

    void send(String command) {
        in.println(command);
    }

    /** Waits for the child to exit; -1 if it did not within {@code seconds}. */
    int exitCode(int seconds) throws InterruptedException {
        return process.waitFor(seconds, TimeUnit.SECONDS) ? process.exitValue() : -1;
    }

    @Override
    public void close() {
        in.close();
        if (process.isAlive()) {
            process.destroyForcibly();
        }
    }
}
