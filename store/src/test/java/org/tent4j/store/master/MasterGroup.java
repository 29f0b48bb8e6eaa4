package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.tent4j.testkit.ChildJvm;
import org.tent4j.testkit.Poll;
import org.tent4j.testkit.net.FreePorts;

/**
 * Three durable masters forming one Ratis group, each a {@link DurableMasterProcess} in a child JVM on its own data dir
 * under one directory, for the tests that stop, kill and restart them. A master started again keeps its dir, its Raft
 * and RPC ports (its admin port is a fresh ephemeral one, read from its {@code LISTENING} line).
 */
final class MasterGroup implements AutoCloseable {
    static final Pattern TERM = Pattern.compile("\"term\":(\\d+)");
    static final Pattern OBJECTS = Pattern.compile("\"objects\":(\\d+)");
    static final Pattern APPLIED = Pattern.compile("(?m)^store_raft_applied_index (\\d+)");
    private static final Duration START = Duration.ofSeconds(60);
    /** Where every master's stderr is appended (ChildJvm's own choice, named here to be read back). */
    private static final Path STDERR = Path.of("target", DurableMasterProcess.class.getSimpleName() + ".log");

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    private final Path dir;
    private final String peers;
    private final int[] rpcPorts = new int[3];
    private final int[] admin = new int[3];
    private final ChildJvm[] masters = new ChildJvm[3];

    private MasterGroup(Path dir) throws IOException {
        this.dir = dir;
        int[] ports = FreePorts.pick(6);
        StringBuilder p = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            rpcPorts[i] = ports[2 * i + 1];
            p.append(i == 0 ? "" : ",").append("m").append(i).append("=127.0.0.1:").append(ports[2 * i])
                    .append('/').append(rpcPorts[i]);
        }
        this.peers = p.toString();
    }

    /**
     * Starts the three masters at once and waits until each serves; a failed start kills those started. One that
     * exited because a port was taken ({@link GroupPorts}) has the group started again on fresh ports.
     */
    static MasterGroup start(Path dir) throws IOException, InterruptedException {
        for (int attempt = 1; ; attempt++) {
            long logFrom = Files.exists(STDERR) ? Files.size(STDERR) : 0;
            MasterGroup g = new MasterGroup(dir);
            try {
                for (int i = 0; i < 3; i++) {
                    g.launch(i);
                }
                for (int i = 0; i < 3; i++) {
                    g.awaitServing(i);
                }
                return g;
            } catch (IOException e) {
                g.close();
                if (attempt == FreePorts.ATTEMPTS || !lostAPort(logFrom)) {
                    throw e;
                }
                GroupPorts.wipe(dir.resolve("m0"), dir.resolve("m1"), dir.resolve("m2"));
            } catch (InterruptedException | RuntimeException | Error e) {
                g.close();
                throw e;
            }
        }
    }

    /**
     * Whether a master of this start exited on a port taken meanwhile: it says so on stderr, which the exception shows
     * only the tail of (the other two go on logging their election); what earlier masters wrote there does not count.
     */
    private static boolean lostAPort(long logFrom) throws IOException {
        if (!Files.exists(STDERR)) {
            return false;
        }
        try (RandomAccessFile log = new RandomAccessFile(STDERR.toFile(), "r")) {
            byte[] since = new byte[(int) Math.max(0, log.length() - logFrom)];
            log.seek(logFrom);
            log.readFully(since);
            return new String(since, StandardCharsets.UTF_8).contains("Address already in use");
        }
    }

    private void launch(int i) throws IOException {
        // C1 only and the serial collector: three JVMs start at once on a small box
        masters[i] = ChildJvm.builder(DurableMasterProcess.class)
                .jvmOptions(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"))
                .stderr(STDERR)
                .args(dir.resolve("m" + i).toString(), Integer.toString(rpcPorts[i]), "m" + i, peers)
                .start();
    }

    private void awaitServing(int i) throws IOException, InterruptedException {
        admin[i] = Integer.parseInt(masters[i].awaitLine("LISTENING ", START).split(" ")[2]);
    }

    /** The masters' store RPC addresses, in index order: what clients and nodes are given. */
    List<String> rpc() {
        List<String> list = new ArrayList<>();
        for (int port : rpcPorts) {
            list.add("127.0.0.1:" + port);
        }
        return list;
    }

    ChildJvm jvm(int i) {
        return masters[i];
    }

    boolean alive(int i) {
        return masters[i] != null && masters[i].process().isAlive();
    }

    /** SIGKILL: the master closes nothing, its sockets are reset by the kernel. */
    void kill(int i) throws InterruptedException {
        masters[i].kill();
    }

    /** Starts master {@code i} again on its dir and ports and waits until it serves (a follower: knows a leader). */
    void restart(int i) throws IOException, InterruptedException {
        launch(i);
        awaitServing(i);
    }

    /** Starts every master not running, all at once, and waits until each serves. */
    void restartDead() throws IOException, InterruptedException {
        List<Integer> started = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            if (!alive(i)) {
                launch(i);
                started.add(i);
            }
        }
        for (int i : started) {
            awaitServing(i);
        }
    }

    /** Sends {@code kill -<signal>} (STOP, CONT) to master {@code i}. */
    void signal(int i, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(masters[i].process().pid())).inheritIO().start();
        assertEquals(0, kill.waitFor(), "kill -" + signal + " " + masters[i].process().pid());
    }

    /** The index of a master that says it leads in a term after {@code afterTerm}, never {@code skip}'s. */
    int awaitLeader(int skip, long afterTerm) throws InterruptedException {
        int[] found = {-1};
        Poll.until("a master other than #" + skip + " leads in a term after " + afterTerm, Duration.ofSeconds(20),
                Duration.ofMillis(50), () -> {
                    for (int i = 0; i < 3; i++) {
                        String h = i == skip ? null : health(i);
                        if (h != null && h.contains("\"role\":\"leader\"") && number(TERM, h) > afterTerm) {
                            found[0] = i;
                            return true;
                        }
                    }
                    return false;
                });
        return found[0];
    }

    /** {@code /health} of master {@code i}; null when it is down or does not answer within a second. */
    String health(int i) {
        return get(i, "/health");
    }

    /** {@code /metrics} of master {@code i}; null when it is down or does not answer within a second. */
    String metrics(int i) {
        return get(i, "/metrics");
    }

    private String get(int i, String page) {
        if (!alive(i)) {
            return null;
        }
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + admin[i] + page))
                    .timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? r.body() : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    static long number(Pattern p, String text) {
        Matcher m = p.matcher(String.valueOf(text));
        assertTrue(m.find(), "no " + p + " in " + text);
        return Long.parseLong(m.group(1));
    }

    /** SIGKILLs every master (a stopped one too). */
    @Override
    public void close() throws InterruptedException {
        for (ChildJvm m : masters) {
            if (m != null) {
                m.kill();
            }
        }
    }
}
