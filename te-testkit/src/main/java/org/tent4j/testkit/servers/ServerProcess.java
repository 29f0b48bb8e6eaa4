package org.tent4j.testkit.servers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One external server binary run as a child process: its log file, readiness wait, stop and kill. Every live child is
 * also killed by a JVM shutdown hook, so a test JVM that dies without closing its servers leaves none behind.
 */
final class ServerProcess {
    private static final Logger LOG = LoggerFactory.getLogger(ServerProcess.class);
    private static final Set<ServerProcess> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Thread hook = new Thread(() -> {
            for (ServerProcess p : LIVE) {
                p.killQuietly();
                p.deleteWorkDirQuietly();
            }
        }, "tent4j-testkit-server-reaper");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    private final String name;
    private final Path binary;
    private final Path workDir;
    private final Path logFile;
    private Process process;
    /** What the command runs under: nothing, or {@code ip netns exec <namespace>} for a test-bed host. */
    private List<String> prefix = List.of();

    private ServerProcess(String name, Path binary, Path workDir) {
        this.name = name;
        this.binary = binary;
        this.workDir = workDir;
        this.logFile = workDir.resolve(name + ".log");
    }

    /**
     * Finds {@code binaryName} (the system property {@code tent4j.<name>.binary} if set, else /usr/bin, then PATH) and
     * creates a temp work dir. A missing binary fails with the apt package that provides it.
     */
    static ServerProcess create(String name, String binaryName, String aptPackage) {
        Path binary = locate(name, binaryName, aptPackage);
        try {
            Path dir = Files.createTempDirectory("tent4j-" + name + "-");
            ServerProcess p = new ServerProcess(name, binary, dir);
            LIVE.add(p);
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temp dir for " + name, e);
        }
    }

    private static Path locate(String name, String binaryName, String aptPackage) {
        String override = System.getProperty("tent4j." + name + ".binary");
        if (override != null && !override.isBlank()) {
            Path p = Paths.get(override);
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p;
            }
            throw new IllegalStateException(binaryName + " not found at " + p + " (set by -Dtent4j." + name
                    + ".binary); install it with: apt-get install -y --no-install-recommends " + aptPackage);
        }
        List<Path> tried = new ArrayList<>();
        tried.add(Paths.get("/usr/bin", binaryName));
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(java.io.File.pathSeparator)) {
                if (!dir.isEmpty()) {
                    tried.add(Paths.get(dir, binaryName));
                }
            }
        }
        for (Path p : tried) {
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p;
            }
        }
        throw new IllegalStateException(binaryName + " not found (looked at " + tried.getFirst()
                + " and on PATH); install it with: apt-get install -y --no-install-recommends " + aptPackage
                + "  (or set -Dtent4j." + name + ".binary=/path/to/" + binaryName + ")");
    }

    Path workDir() {
        return workDir;
    }

    Path binary() {
        return binary;
    }

    /** Runs the binary under {@code prefix} from now on (a {@link org.tent4j.testkit.net.Host}'s command prefix). */
    synchronized void runUnder(List<String> prefix) {
        this.prefix = List.copyOf(prefix);
    }

    synchronized boolean isAlive() {
        return process != null && process.isAlive();
    }

    synchronized long pid() {
        return process == null ? -1 : process.pid();
    }

    /**
     * Starts the binary with {@code args} and waits until {@code ready} says so. Throws {@link ServerStartException}
     * with the log tail if the process exits or is not ready within {@code timeout}; the process is killed then.
     */
    synchronized void start(List<String> args, BooleanSupplier ready, Duration timeout) {
        if (isAlive()) {
            throw new IllegalStateException(name + " is already running (pid " + process.pid() + ")");
        }
        List<String> command = new ArrayList<>(prefix);
        command.add(binary.toString());
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(workDir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new ServerStartException(name + ": cannot run " + binary + ": " + e.getMessage(), false, e);
        }
        LOG.debug("started {} pid {}: {}", name, process.pid(), command);
        long deadline = System.nanoTime() + timeout.toNanos();
        long sleepMs = 10;
        while (true) {
            if (!process.isAlive()) {
                String tail = logTail(30);
                throw new ServerStartException(name + " (" + binary + ") exited with status " + process.exitValue()
                        + " before it was ready; log " + logFile + ":\n" + tail, portInUse(tail), null);
            }
            if (ready.getAsBoolean()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                killQuietly();
                throw new ServerStartException(name + " (" + binary + ") was not ready within " + timeout.toMillis()
                        + " ms; log " + logFile + ":\n" + logTail(30), false, null);
            }
            try {
                Thread.sleep(sleepMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                killQuietly();
                throw new ServerStartException(name + ": interrupted while waiting for readiness", false, e);
            }
            sleepMs = Math.min(sleepMs * 2, 100);
        }
    }

    private static boolean portInUse(String log) {
        String l = log.toLowerCase(java.util.Locale.ROOT);
        return l.contains("address already in use");
    }

    /** Graceful stop (SIGTERM), then SIGKILL after {@code grace}. */
    synchronized void stop(Duration grace) {
        if (process == null) {
            return;
        }
        Process p = process;
        p.destroy();
        try {
            if (!p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn("{} pid {} did not exit within {} ms of SIGTERM; killing it", name, p.pid(), grace.toMillis());
                p.destroyForcibly();
                p.waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
        }
    }

    /** Crash-like stop: SIGKILL and wait for the exit. */
    synchronized void kill() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        try {
            process.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void killQuietly() {
        Process p = process;
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
            try {
                p.waitFor(2, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Kills the process and deletes the work dir. */
    void close() {
        synchronized (this) {
            killQuietly();
        }
        deleteWorkDirQuietly();
        LIVE.remove(this);
    }

    private void deleteWorkDirQuietly() {
        if (!Files.exists(workDir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(workDir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort: a leftover temp dir is harmless
                }
            });
        } catch (IOException | UncheckedIOException ignored) {
            // best effort
        }
    }

    /** The last {@code lines} lines of the server's log (stdout and stderr together). */
    String logTail(int lines) {
        try {
            if (!Files.exists(logFile)) {
                return "(no log written)";
            }
            List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(cannot read " + logFile + ": " + e + ")";
        }
    }

    /** Start failure; {@link #portInUse()} says whether trying again on other ports may help. */
    static final class ServerStartException extends IllegalStateException {
        private final boolean portInUse;

        ServerStartException(String message, boolean portInUse, Throwable cause) {
            super(message, cause);
            this.portInUse = portInUse;
        }

        boolean portInUse() {
            return portInUse;
        }
    }
}
