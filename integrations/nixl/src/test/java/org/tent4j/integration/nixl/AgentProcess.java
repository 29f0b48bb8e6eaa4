package org.tent4j.integration.nixl;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.tent4j.api.EngineConfig;
import org.tent4j.testkit.ChildJvm;

/**
 * A target agent in its own JVM, driven over stdin/stdout by {@link Child}: agent {@code args[0]} with the tent4j
 * backend and one registered DRAM region of {@code args[1]} bytes filled with {@link AgentTest#fill} seed 77, its
 * metadata published when the engine has a store. It prints {@code READY <listen address> <region address>} and then
 * answers {@code CRC <offset> <length>}, {@code NOTES <n>} (the next n notifications as {@code agent:text}, waiting up
 * to 10 s) and {@code FETCH <agent>} (loads that agent's metadata from the store, then sends it a notification); it
 * ends on {@code EXIT}.
 */
public final class AgentProcess {
    public static void main(String[] args) throws Exception {
        long size = Long.parseLong(args[1]);
        EngineConfig.Builder b = EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, "tcp");
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            b.set(kv[0], kv[1]);
        }
        EngineConfig cfg = b.build();
        try (Agent agent = Agent.create(AgentConfig.of(args[0], cfg))) {
            agent.createBackend("tent4j", Map.of());
            MemorySegment region = Arena.global().allocate(size, 4096);
            AgentTest.fill(region, 77);
            agent.registerMem(DescriptorList.dram(region));
            boolean store = !cfg.values().getOrDefault(EngineConfig.METADATA_URI, "p2p").equals("p2p");
            if (store) {
                agent.sendLocalMD();
            }
            PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
            out.println("READY " + agent.listenAddress() + " " + region.address());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            List<String> notes = new ArrayList<>();
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                switch (w[0]) {
                    case "CRC" -> out.println("CRC " + AgentTest.crc(region.asSlice(Long.parseLong(w[1]), Long.parseLong(w[2]))));
                    case "NOTES" -> {
                        int n = Integer.parseInt(w[1]);
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                        // getNotifs is NIXL's polling interface
                        while (notes.size() < n && System.nanoTime() < deadline) {
                            agent.getNotifs().forEach((from, msgs) -> msgs.forEach(m -> notes.add(from + ":" + new String(m, StandardCharsets.UTF_8))));
                            LockSupport.parkNanos(100_000);
                        }
                        out.println("NOTES " + String.join("|", notes));
                        notes.clear();
                    }
                    case "FETCH" -> {
                        agent.fetchRemoteMD(w[1], Agent.FULL, Duration.ofSeconds(10));
                        agent.genNotif(w[1], ("hello from " + args[0]).getBytes(StandardCharsets.UTF_8));
                        out.println("FETCHED");
                    }
                    case "EXIT" -> {
                        return;
                    }
                    default -> out.println("ERR unknown command " + w[0]);
                }
            }
        }
    }

    /** The test's handle on a running {@link AgentProcess}. */
    static final class Child implements AutoCloseable {
        final ChildJvm jvm;
        final String host;
        final int port;
        final long address;

        Child(String name, long size, String... config) throws IOException, InterruptedException {
            jvm = ChildJvm.builder(AgentProcess.class).args(name, Long.toString(size)).args(config).start();
            try {
                String[] w = jvm.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT).split(" ");
                host = w[1].substring(0, w[1].lastIndexOf(':'));
                port = Integer.parseInt(w[1].substring(w[1].lastIndexOf(':') + 1));
                address = Long.parseLong(w[2]);
            } catch (IOException e) {
                jvm.kill();
                throw e;
            }
        }

        /** Sends a command and returns its answer without the answer's first word. */
        String ask(String command) throws IOException, InterruptedException {
            String reply = jvm.ask(command);
            return reply.substring(reply.indexOf(' ') + 1);
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
