package org.tent4j.cli.store;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The three store masters {@link FailoverBench} runs: {@code tent4j store master --data-dir --id --peers} processes
 * started from this JVM's java and class path, each on its own dir under one directory, its output appended to
 * {@code <dir>/m<i>.log}. A master started again keeps its dir and its Raft, RPC and admin ports.
 */
final class FailoverGroup implements AutoCloseable {
    private static final Pattern TERM = Pattern.compile("\"term\":(\\d+)");
    private static final Pattern LEADER_ID = Pattern.compile("\"leader_id\":\"([^\"]+)\"");

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    private final Path dir;
    private final String host;
    private final String peers;
    private final int[] rpcPorts = new int[3];
    private final int[] adminPorts = new int[3];
    private final Process[] masters = new Process[3];

    FailoverGroup(Path dir, String host) throws IOException {
        this.dir = dir;
        this.host = host;
        StringBuilder p = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            rpcPorts[i] = freePort();
            adminPorts[i] = freePort();
            p.append(i == 0 ? "" : ",").append(id(i)).append('=').append(host).append(':').append(freePort())
                    .append('/').append(rpcPorts[i]);
        }
        this.peers = p.toString();
    }

    static String id(int i) {
        return "m" + i;
    }

    /** {@code host:port,...}: what the node and the client are given. */
    String masterList() {
        List<String> list = new ArrayList<>();
        for (int port : rpcPorts) {
            list.add(host + ":" + port);
        }
        return String.join(",", list);
    }

    void start(int i) throws IOException {
        String java = ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx512m", "-XX:+UseParallelGC",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                "org.tent4j.cli.Tent4jCommand", "store", "master", "--host", host,
                "--port", Integer.toString(rpcPorts[i]), "--admin-port", Integer.toString(adminPorts[i]),
                "--data-dir", dir.resolve(id(i)).toString(), "--id", id(i), "--peers", peers));
        Path log = dir.resolve(id(i) + ".log");
        Files.createDirectories(dir);
        masters[i] = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }

    /** SIGKILL: the master closes nothing; waits until it is gone. */
    void kill(int i) throws InterruptedException {
        masters[i].destroyForcibly();
        masters[i].waitFor(30, TimeUnit.SECONDS);
    }

    /**
     * Waits until master {@code i} answers {@code /health} naming a leader (itself or another); false, when
     * {@code timeout} passed first, or the process exited (its log says why).
     */
    boolean awaitFollowing(int i, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!masters[i].isAlive()) {
                return false;
            }
            String h = health(i);
            if (h != null && LEADER_ID.matcher(h).find()) {
                return true;
            }
            LockSupport.parkNanos(50_000_000L);
        }
        return false;
    }

    /** The index of the master whose {@code /health} says it leads, or -1 when none does within {@code timeout}. */
    int awaitLeader(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - deadline < 0) {
            for (int i = 0; i < 3; i++) {
                String h = health(i);
                if (h != null && h.contains("\"role\":\"leader\"")) {
                    return i;
                }
            }
            LockSupport.parkNanos(20_000_000L);
        }
        return -1;
    }

    /** The Raft term master {@code i}'s {@code /health} says, or -1 when it does not answer. */
    long term(int i) {
        Matcher m = TERM.matcher(String.valueOf(health(i)));
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    private String health(int i) {
        if (masters[i] == null || !masters[i].isAlive()) {
            return null;
        }
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + host + ":" + adminPorts[i]
                    + "/health")).timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? r.body() : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    Path log(int i) {
        return dir.resolve(id(i) + ".log");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            if (masters[i] != null && masters[i].isAlive()) {
                kill(i);
            }
        }
    }
}
