package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.StoreClock;
import org.tent4j.store.admin.AdminServer;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.rpc.MasterServer;

/**
 * {@code store-bench --mode overflow} end to end: a real master with its admin HTTP, a node with 8 MiB of memory and
 * a disk segment, and the bench in this JVM writing four times the memory tier in 256 KiB values (1 MiB ones would
 * make each writer thread ask for a reservation of 8 MiB, the whole pool, which eviction never takes), then reading every
 * one back verified, from memory and (through nvmeof, the node's dir being a peer root) from the node's disk.
 */
class OverflowBenchTest {
    @TempDir
    Path dir;

    @Test
    void writesFourTimesMemoryAndReadsEveryKeyBackVerifiedFromMemoryAndDisk() throws Exception {
        Path disk = Files.createDirectory(dir.resolve("disk"));
        Path config = Files.writeString(dir.resolve("bench.properties"), "transports.nvmeof.peer_roots=" + disk + "\n");
        try (MasterServer server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 100);
             AdminServer admin = AdminServer.start(server, "127.0.0.1", 0);
             TransferEngine nodeEngine = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
             StoreClient node = StoreClient.builder(nodeEngine, "127.0.0.1:" + server.port()).connect()) {
            node.contribute(8 << 20);
            node.contributeDisk(disk, 64 << 20);
            List<String> args = new ArrayList<>(List.of("--master", "127.0.0.1:" + server.port(), "--admin", "127.0.0.1:" + admin.port(),
                    "--control-host", "127.0.0.1", "--config", config.toString(), "--mode", "overflow", "--size", "256k",
                    "--total", "4x", "--threads", "2", "--verify", "--settle-timeout", "20s"));
            String[] json = run(args, true);
            assertEquals("0", json[0], json[2]);
            String j = json[1];
            assertEquals(8 << 20, field(j, "memoryBytes"));
            assertEquals(128, field(j, "keys"));
            assertEquals(128, field(j, "puts"), "every put acknowledged: " + j);
            assertEquals(128, field(j, "reads"), "every key read back: " + j);
            assertEquals(128, field(j, "memoryReads") + field(j, "diskReads"));
            assertTrue(field(j, "diskReads") >= 64, "most of 4x memory is read from disk: " + j);
            // puts into the full memory wait for the offloads in flight: memory ends near the watermark (32 values
            // fill it), only the excess goes to disk (before: 127 offloaded, one value left in memory)
            assertTrue(field(j, "memoryReads") >= 16, "at least half the memory tier holds values: " + j);
            assertTrue(field(j, "offloadsStarted") <= 112, "about the excess offloaded: " + j);
            assertTrue(field(j, "offloadsStarted") >= field(j, "diskReads"), j);
            assertTrue(field(j, "fullPuts") >= 1, "puts into the full memory tier counted: " + j);
            assertEquals(0, field(j, "errors"));
            assertEquals(0, field(j, "mismatches"));
            assertEquals(1, field(j, "verified"));
            assertEquals(1, field(j, "settled"));
            for (String f : List.of("putsPerSecond", "fullPutsPerSecond", "readsPerSecond", "memoryReadsPerSecond",
                    "diskReadsPerSecond", "diskReadMibPerSecond", "settleSeconds")) {
                field(j, f);
            }
            assertEquals(128, server.master().state().objectCount(), "nothing dropped");

            // more than memory and disk hold together is refused before anything is written
            args.set(args.indexOf("4x"), "100x");
            String[] refused = run(args, false);
            assertEquals("2", refused[0], refused[2]);
            assertTrue(refused[2].contains("--total 100x") && refused[2].contains("memory (8388608 B) and disk (67108864 B) have free"), refused[2]);
            assertEquals(128, server.master().state().objectCount());

            // the summary for people: 10 MiB more under another prefix
            args.set(args.indexOf("100x"), "10m");
            args.addAll(List.of("--prefix", "text"));
            String[] text = run(args, false);
            assertEquals("0", text[0], text[2]);
            assertTrue(text[1].contains("overflow: memory tier 8,388,608 B, disk tier 67,108,864 B; 40 puts of 262144 B"), text[1]);
            assertTrue(text[1].contains("into a full memory tier (from the first offload): "), text[1]);
            assertTrue(text[1].contains("settle: ") && text[1].contains("none in flight"), text[1]);
            assertTrue(text[1].contains("read: 40 keys in ") && text[1].contains("0 errors, 0 mismatches"), text[1]);

            // reads in batches, then the disk keys read again for a second, measured (the warm disk read rate)
            List<String> batched = new ArrayList<>(args.subList(0, args.indexOf("--total")));
            batched.addAll(List.of("--total", "2x", "--threads", "2", "--verify", "--settle-timeout", "20s", "--prefix", "batched",
                    "--batch", "4", "--warmup", "0s", "--duration", "1s"));
            String[] warm = run(batched, true);
            assertEquals("0", warm[0], warm[2]);
            String w = warm[1];
            assertEquals(64, field(w, "reads"), "every key read back in batches: " + w);
            assertEquals(0, field(w, "errors"));
            assertEquals(0, field(w, "mismatches"));
            assertTrue(field(w, "diskReads") >= 16, "most of 2x memory is read from disk: " + w);
            assertTrue(field(w, "warmDiskReads") > 0, "disk keys read again while measuring: " + w);
            assertTrue(field(w, "warmDiskReadsAtMaster") >= field(w, "warmDiskReads"), "each a disk read at the master: " + w);
            assertTrue(field(w, "warmDiskReadMibPerSecond") > 0, w);
            assertEquals(128 + 40 + 64, server.master().state().objectCount(), "nothing dropped");
        }
    }

    /** {exit status, stdout, stderr}. */
    private static String[] run(List<String> args, boolean json) {
        List<String> all = new ArrayList<>(args);
        if (json) {
            all.add("--json");
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = StoreBench.run(all.toArray(String[]::new), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new String[]{Integer.toString(rc), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    private static long field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":([0-9.]+|true|false)").matcher(json);
        assertTrue(m.find(), name + " in " + json);
        String v = m.group(1);
        return v.equals("true") ? 1 : v.equals("false") ? 0 : (long) Double.parseDouble(v);
    }
}
