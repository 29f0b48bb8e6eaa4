package org.tent4j.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;
import org.tent4j.testkit.ChildJvm;

/**
 * A store client in its own JVM that contributes no memory, driven over stdin/stdout by {@link Child}: {@code PUT key
 * size seed replicas [segment,...]} answers {@code OK <crc>}; {@code GET key} answers {@code OK <crc> <size> <ms>};
 * failures answer {@code ERR <error> <ms> <message>}; {@code EXIT} ends it. Arguments: the master's address, then engine settings
 * ({@code key=value}).
 */
public final class StoreDriver {
    public static void main(String[] args) throws Exception {
        EngineConfig.Builder cfg = EngineConfig.builder();
        for (String kv : Arrays.copyOfRange(args, 1, args.length)) {
            String[] w = kv.split("=", 2);
            cfg.set(w[0], w[1]);
        }
        try (TransferEngine engine = TransferEngine.create(cfg.build());
             StoreClient client = StoreClient.builder(engine, args[0]).connect()) {
            PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
            out.println("READY " + client.clientId());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                long start = System.nanoTime();
                try {
                    switch (w[0]) {
                        case "PUT" -> {
                            byte[] v = value(Integer.parseInt(w[2]), Long.parseLong(w[3]));
                            ReplicateConfig rc = ReplicateConfig.replicas(Integer.parseInt(w[4]));
                            if (w.length > 5) {
                                rc = rc.withPreferredSegments(List.of(w[5].split(",")));
                            }
                            client.put(w[1], v, rc);
                            out.println("OK " + crc(v));
                        }
                        case "GET" -> {
                            byte[] v = client.get(w[1]);
                            out.println("OK " + crc(v) + " " + v.length + " " + millisSince(start));
                        }
                        case "EXIT" -> {
                            return;
                        }
                        default -> out.println("ERR INVALID_PARAMS 0 unknown command " + w[0]);
                    }
                } catch (StoreException e) {
                    out.println("ERR " + e.error() + " " + millisSince(start) + " " + e.getMessage().replace('\n', ' '));
                }
            }
        }
    }

    private static long millisSince(long start) {
        return (System.nanoTime() - start) / 1_000_000;
    }

    static byte[] value(int size, long seed) {
        byte[] v = new byte[size];
        new Random(seed).nextBytes(v);
        return v;
    }

    static long crc(byte[] v) {
        return TargetProcess.crc(java.lang.foreign.MemorySegment.ofArray(v));
    }

    /** The test's handle on a running {@link StoreDriver}. */
    static final class Child implements AutoCloseable {
        final ChildJvm jvm;

        Child(ChildJvm.Builder builder) throws IOException, InterruptedException {
            jvm = builder.start();
            try {
                jvm.awaitLine("READY ", Duration.ofSeconds(60));
            } catch (IOException e) {
                jvm.kill();
                throw e;
            }
        }

        String[] ask(String command) throws IOException, InterruptedException {
            return jvm.ask(command, Duration.ofSeconds(60)).split(" ", 5);
        }

        @Override
        public void close() throws InterruptedException {
            jvm.close();
        }
    }
}
