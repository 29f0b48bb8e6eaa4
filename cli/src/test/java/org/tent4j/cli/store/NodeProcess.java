package org.tent4j.cli.store;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.zip.CRC32C;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;
import org.tent4j.testkit.ChildJvm;

/**
 * A store client in its own JVM that contributes a segment, driven over stdin/stdout by {@link Node}: {@code PUT key
 * size seed replicas} answers {@code OK <crc>}, {@code GET key} answers {@code OK <crc> <size>}, failures answer
 * {@code ERR <error> <message>}; {@code PUTBATCH prefix count size seed replicas} puts {@code prefix0..} in one batch
 * (through a reservation) and answers {@code OK <crc of each, comma-separated>}; {@code EXIT} ends it.
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
                        case "PUTBATCH" -> {
                            int count = Integer.parseInt(w[2]);
                            int size = Integer.parseInt(w[3]);
                            java.util.List<String> keys = new java.util.ArrayList<>();
                            java.util.List<java.lang.foreign.MemorySegment> values = new java.util.ArrayList<>();
                            StringBuilder crcs = new StringBuilder();
                            var mem = engine.allocate((long) count * size, org.tent4j.api.Location.CPU, org.tent4j.api.Permission.READ_WRITE);
                            try {
                                for (int i = 0; i < count; i++) {
                                    byte[] v = value(size, Long.parseLong(w[4]) + i);
                                    var slice = mem.segment().asSlice((long) i * size, size);
                                    java.lang.foreign.MemorySegment.copy(java.lang.foreign.MemorySegment.ofArray(v), 0, slice, 0, size);
                                    keys.add(w[1] + i);
                                    values.add(slice);
                                    crcs.append(i == 0 ? "" : ",").append(crc(v));
                                }
                                var outcomes = client.putBatchFrom(keys, values, ReplicateConfig.replicas(Integer.parseInt(w[5])));
                                for (var o : outcomes) {
                                    o.get();
                                }
                            } finally {
                                engine.unregister(mem);
                            }
                            out.println("OK " + crcs);
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

    /** What follows {@code OK } in a reply; fails the test on any other reply. */
    static String okString(String reply) {
        org.junit.jupiter.api.Assertions.assertTrue(reply.startsWith("OK "), reply);
        return reply.substring(3);
    }

    /** The number after {@code OK } in a reply (a CRC); fails the test on any other reply. */
    static long okLong(String reply) {
        return Long.parseLong(okString(reply).split(" ")[0]);
    }

    /** The test's handle on a running {@link NodeProcess}. */
    static final class Node implements AutoCloseable {
        final ChildJvm jvm;
        final String clientId;
        final String segmentId;

        Node(String master, long segmentBytes) throws IOException, InterruptedException {
            this(ChildJvm.start(NodeProcess.class, master, Long.toString(segmentBytes)));
        }

        /** {@code n} nodes, their JVMs started together (each start is mostly waiting on a loaded box). */
        static Node[] start(String master, long segmentBytes, int n) throws IOException, InterruptedException {
            ChildJvm[] jvms = new ChildJvm[n];
            Node[] nodes = new Node[n];
            try {
                for (int i = 0; i < n; i++) {
                    jvms[i] = ChildJvm.start(NodeProcess.class, master, Long.toString(segmentBytes));
                }
                for (int i = 0; i < n; i++) {
                    nodes[i] = new Node(jvms[i]);
                }
                return nodes;
            } catch (IOException | RuntimeException e) {
                for (ChildJvm j : jvms) {
                    if (j != null) {
                        j.kill();
                    }
                }
                throw e;
            }
        }

        private Node(ChildJvm started) throws IOException, InterruptedException {
            jvm = started;
            try {
                String[] w = jvm.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT).split(" ");
                clientId = w[1];
                segmentId = w[2];
            } catch (IOException e) {
                jvm.kill();
                throw e;
            }
        }

        String call(String command) throws IOException, InterruptedException {
            return jvm.ask(command);
        }

        void kill() throws InterruptedException {
            jvm.kill();
        }

        @Override
        public void close() throws InterruptedException {
            jvm.close();
        }
    }
}
