package org.tent4j.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A JVM started from this test's class path and driven line by line over its stdin and stdout: the way tests put an
 * engine, a store node or an agent in a process of its own. Every read has a deadline, so a child that hangs or dies
 * fails the test with the tail of its stderr instead of hanging the suite. The child inherits no {@code TENT4J_}
 * environment variable, so a developer's shell cannot change what a test runs.
 */
public final class ChildJvm implements AutoCloseable {
    /** How long {@link #ask} and {@link #close} wait unless told otherwise. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);
    private static final String EOF = "\0eof";

    private final String name;
    private final Process process;
    private final Path stderr;
    private final PrintWriter stdin;
    private final LinkedBlockingQueue<String> stdout = new LinkedBlockingQueue<>();
    /** Lines that arrived before the answer an {@link #ask(String, String)} waited for: read first by {@link #next}. */
    private final java.util.concurrent.ConcurrentLinkedDeque<String> setAside = new java.util.concurrent.ConcurrentLinkedDeque<>();

    private ChildJvm(String name, Process process, Path stderr) {
        this.name = name;
        this.process = process;
        this.stderr = stderr;
        this.stdin = new PrintWriter(process.outputWriter(StandardCharsets.UTF_8), true);
        BufferedReader out = process.inputReader(StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name(name + "-stdout").start(() -> {
            try {
                for (String line; (line = out.readLine()) != null; ) {
                    stdout.add(line);
                }
            } catch (IOException ignored) {
                // the child died: the EOF marker below tells whoever waits
            }
            stdout.add(EOF);
        });
    }

    /**
     * Starts {@code mainClass} with these program arguments, its stderr appended to {@code target/<name>.log}.
     *
     * @param mainClass the class whose {@code main} runs
     * @param args      its program arguments
     * @return the running child; close it
     * @throws IOException when the process cannot be started
     */
    public static ChildJvm start(Class<?> mainClass, String... args) throws IOException {
        return builder(mainClass).args(args).start();
    }

    /**
     * A builder for a child running {@code mainClass} on this JVM's class path.
     *
     * @param mainClass the class whose {@code main} runs
     * @return the builder
     */
    public static Builder builder(Class<?> mainClass) {
        return new Builder(mainClass);
    }

    /**
     * The next line the child prints, waiting at most {@code timeout}.
     *
     * @param timeout how long to wait
     * @return the line, without its line end
     * @throws IOException naming the child and showing its stderr when it printed nothing in time or exited
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public String next(Duration timeout) throws IOException, InterruptedException {
        String held = setAside.poll();
        if (held != null) {
            return held;
        }
        return take(timeout);
    }

    private String take(Duration timeout) throws IOException, InterruptedException {
        String line = stdout.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (line == null || line.equals(EOF)) {
            if (line != null) {
                stdout.add(EOF); // later reads see the end too
            }
            throw new IOException(name + (line == null ? " printed nothing within " + timeout : " exited")
                    + "; its stderr (" + stderr + "):\n" + stderrTail());
        }
        return line;
    }

    /**
     * Skips the child's lines until one starts with {@code prefix} and returns it.
     *
     * @param prefix  what the line starts with
     * @param timeout how long to wait for it in all
     * @return the line
     * @throws IOException as {@link #next(Duration)}
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public String awaitLine(String prefix, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (;;) {
            String line = next(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    /**
     * Sends one command line and returns the child's next line.
     *
     * @param command the line to send
     * @return the child's answer
     * @throws IOException as {@link #next(Duration)}
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public String ask(String command) throws IOException, InterruptedException {
        return ask(command, DEFAULT_TIMEOUT);
    }

    /**
     * Sends one command line and returns the child's next line, waiting at most {@code timeout}.
     *
     * @param command the line to send
     * @param timeout how long to wait for the answer
     * @return the child's answer
     * @throws IOException as {@link #next(Duration)}
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public String ask(String command, Duration timeout) throws IOException, InterruptedException {
        send(command);
        return next(timeout);
    }

    /**
     * Sends one command line and returns the child's first line that starts with {@code answer}: lines the child
     * printed before it (the end of a task it runs beside its commands, say) are kept, in order, for {@link #next} and
     * {@link #awaitLine}, never taken for the answer.
     *
     * @param command the line to send
     * @param answer  what the answer line starts with
     * @return the answer line
     * @throws IOException as {@link #next(Duration)}
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public String ask(String command, String answer) throws IOException, InterruptedException {
        send(command);
        long deadline = System.nanoTime() + DEFAULT_TIMEOUT.toNanos();
        for (;;) {
            String line = take(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            if (line.startsWith(answer)) {
                return line;
            }
            setAside.add(line);
        }
    }

    /**
     * Sends one command line without waiting for an answer.
     *
     * @param command the line to send
     */
    public void send(String command) {
        stdin.println(command);
    }

    /**
     * The child's process, for its pid or exit value.
     *
     * @return the process
     */
    public Process process() {
        return process;
    }

    /**
     * Kills the child without letting it close anything: a crash, as its peers see it.
     *
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /**
     * Stops the child as a service manager would (SIGTERM), killing it if it has not gone within 10 s.
     *
     * @throws InterruptedException when the waiting thread is interrupted
     */
    public void terminate() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            kill();
        }
    }

    /**
     * The last 8000 characters the child wrote to stderr.
     *
     * @return the text, or a note when the file cannot be read
     */
    public String stderrTail() {
        try {
            String text = Files.readString(stderr);
            return text.length() > 8000 ? "..." + text.substring(text.length() - 8000) : text;
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /**
     * Asks the child to {@code EXIT}; one that has not gone within 3 s (a command that reads no stdin, such as a
     * server) is stopped as by {@link #terminate()}: SIGTERM, then killed after 10 s.
     */
    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            send("EXIT");
            if (!process.waitFor(3, TimeUnit.SECONDS)) {
                terminate();
            }
        }
    }

    /**
     * Says how to start a {@link ChildJvm}; {@link #start()} starts it.
     */
    public static final class Builder {
        private final Class<?> mainClass;
        private final List<String> jvmOptions = new ArrayList<>(List.of("--enable-native-access=ALL-UNNAMED"));
        private final List<String> args = new ArrayList<>();
        private final List<String> prefix = new ArrayList<>();
        private String heap = "256m";
        private Path stderr;

        private Builder(Class<?> mainClass) {
            this.mainClass = mainClass;
        }

        /**
         * -Xmx of the child; 256m unless set.
         *
         * @param maxHeap e.g. {@code 512m}
         * @return this builder
         */
        public Builder heap(String maxHeap) {
            this.heap = maxHeap;
            return this;
        }

        /**
         * Options for the child JVM, after this builder's own (later ones win).
         *
         * @param options JVM options
         * @return this builder
         */
        public Builder jvmOptions(List<String> options) {
            jvmOptions.addAll(options);
            return this;
        }

        /**
         * Adds program arguments.
         *
         * @param programArgs the arguments
         * @return this builder
         */
        public Builder args(String... programArgs) {
            args.addAll(List.of(programArgs));
            return this;
        }

        /**
         * Adds program arguments.
         *
         * @param programArgs the arguments
         * @return this builder
         */
        public Builder args(List<String> programArgs) {
            args.addAll(programArgs);
            return this;
        }

        /**
         * Words before the java command, e.g. {@code ip netns exec <namespace>} to start the child inside another
         * network namespace (TestNetwork's {@code Host.jvm} sets it). The prefix must exec the java command, so that
         * {@link ChildJvm#kill()} and {@link ChildJvm#terminate()} reach the JVM itself.
         *
         * @param words the prefix's words
         * @return this builder
         */
        public Builder commandPrefix(List<String> words) {
            prefix.addAll(words);
            return this;
        }

        /**
         * Where the child's stderr is appended; {@code target/<main class simple name>.log} unless set.
         *
         * @param file the log file
         * @return this builder
         */
        public Builder stderr(Path file) {
            this.stderr = file;
            return this;
        }

        /**
         * Starts the child, on this JVM's java command and class path.
         *
         * @return the running child; close it
         * @throws IOException when the process cannot be started
         */
        public ChildJvm start() throws IOException {
            Path log = stderr != null ? stderr : Path.of("target", mainClass.getSimpleName() + ".log");
            List<String> cmd = new ArrayList<>(prefix);
            cmd.add(ProcessHandle.current().info().command()
                    .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
            cmd.add("-Xmx" + heap); // before the options, so that an -Xmx among them wins
            cmd.addAll(jvmOptions);
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add(mainClass.getName());
            cmd.addAll(args);
            if (log.getParent() != null) {
                Files.createDirectories(log.getParent());
            }
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
            pb.environment().keySet().removeIf(k -> k.startsWith("TENT4J_"));
            return new ChildJvm(mainClass.getSimpleName(), pb.start(), log);
        }
    }
}
