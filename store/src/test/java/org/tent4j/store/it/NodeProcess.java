package org.tent4j.store.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;

/**
 * A store client in its own JVM that contributes a segment, driven over stdin/stdout by {@link Node}: {@code PUT key
 * size seed replicas} answers {@code OK <crc>}, {@code GET key} answers {@code OK <crc> <size>}, failures answer
 * {@code ERR <error> <message>}; {@code EXIT} ends it.
 */
public final class NodeProcess {
    public static void main(String[] args) throws Exception {
        String master = args[0];
        long segmentBytes = Long.parseLong(args[1]);
        try (TransferEngine engine = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
             StoreClient client = StoreClient.builder(engine, master).stagingBytes(16 << 20).connect()) {
            SegmentSpec seg = client.contribute(segmentBytes);
            PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
            out.println("READY " + client.clientId() + " " + seg.id());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                try {
                    switch (w[0]) {
                        case "PUT" -> {
                            byte[] v = value(Integer.parseInt(w[2]), Long.parseLong(w[3]));
                            client.put(w[1], v, ReplicateConfig.replicas(Integer.parseInt(w[4])));
                            out.println("OK " + crc(v));
                        }
                        case "GET" -> {
                            byte[] v = client.get(w[1]);
                            out.println("OK " + crc(v) + " " + v.length);
                        }
                        case "REMOVE_ALL" -> out.println("OK " + client.removeAll(true));
                        case "EXIT" -> {
                            return;
                        }
                        default -> out.println("ERR INVALID_PARAMS unknown command " + w[0]);
                    }
                } catch (StoreException e) {
                    out.println("ERR " + e.error() + " " + e.getMessage().replace('\n', ' '));
                }
            }
        }
    }

    static byte[] value(int size, long seed) {
        byte[] v = new byte[size];
        new Random(seed).nextBytes(v);
        return v;
    }

    static long crc(byte[] v) {
        CRC32C c = new CRC32C();
        c.update(v);
        return c.getValue();
    }

    /** Starts a JVM running {@code mainClass} with this test's class path; stderr goes to target/{@code log}. */
    static Process launch(Class<?> mainClass, String log, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"), mainClass.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(Path.of("target", log).toFile()));
        pb.environment().keySet().removeIf(k -> k.startsWith("TENT4J_"));
        return pb.start();
    }

    /** The test's handle on a running {@link NodeProcess}. */
    static final class Node implements AutoCloseable {
        final Process process;
        final String clientId;
        final String segmentId;
        private final BufferedReader out;
        private final PrintWriter in;

        Node(String master, long segmentBytes) throws IOException {
            process = launch(NodeProcess.class, "store-node.log", master, Long.toString(segmentBytes));
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            String ready = out.readLine();
            if (ready == null || !ready.startsWith("READY ")) {
                process.destroyForcibly();
                throw new IOException("store node did not start: " + ready + " (see target/store-node.log)");
            }
            String[] w = ready.split(" ");
            clientId = w[1];
            segmentId = w[2];
        }

        String call(String command) throws IOException {
            in.println(command);
            String line = out.readLine();
            if (line == null) {
                throw new IOException("store node " + clientId + " ended (see target/store-node.log)");
            }
            return line;
        }

        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws Exception {
            if (process.isAlive()) {
                in.println("EXIT");
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
        }
    }
}
