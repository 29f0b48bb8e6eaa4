package org.tent4j.integration.nixl;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.tent4j.api.EngineConfig;

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
        final Process process;
        final String host;
        final int port;
        final long address;
        private final BufferedReader out;
        private final PrintWriter in;

        Child(String name, long size, String... config) throws IOException {
            List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                    "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                    AgentProcess.class.getName(), name, Long.toString(size)));
            cmd.addAll(List.of(config));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(
                    Path.of("target", "agent-process.log").toFile()));
            pb.environment().keySet().removeIf(k -> k.startsWith("TENT4J_"));
            process = pb.start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            String ready = out.readLine();
            if (ready == null || !ready.startsWith("READY ")) {
                process.destroyForcibly();
                throw new IOException("agent process did not start: " + ready + " (see target/agent-process.log)");
            }
            String[] w = ready.split(" ");
            host = w[1].substring(0, w[1].lastIndexOf(':'));
            port = Integer.parseInt(w[1].substring(w[1].lastIndexOf(':') + 1));
            address = Long.parseLong(w[2]);
        }

        String ask(String command) throws IOException {
            in.println(command);
            String reply = out.readLine();
            if (reply == null) {
                throw new IOException("agent process ended on '" + command + "' (see target/agent-process.log)");
            }
            return reply.substring(reply.indexOf(' ') + 1);
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
