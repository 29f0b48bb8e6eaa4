package org.tent4j.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/** Flag parsing and validation; none of these runs reach an engine. */
class TeBenchOptionsTest {

    private static TeBench parse(String... args) {
        TeBench bench = new TeBench();
        TeBench.commandLine(bench).parseArgs(args);
        return bench;
    }

    /** Runs te-bench and returns exit status, stdout and stderr. */
    record Run(int status, String out, String err) {
    }

    static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = TeBench.commandLine(new TeBench());
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int status = cl.execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    @Test
    void defaults() {
        TeBench b = parse();
        assertEquals(TeBench.Mode.LOOPBACK, b.mode);
        assertEquals(TeBench.Operation.READ, b.operation);
        assertEquals("tcp", b.protocol);
        assertEquals(65536, b.blockSize);
        assertEquals(32, b.batchSize);
        assertEquals(2, b.threads);
        assertEquals(Duration.ofSeconds(10), b.duration);
        assertEquals(Duration.ofSeconds(3), b.warmup);
        assertEquals(256L << 20, b.bufferSize);
        assertNull(b.metadataServer, "no metadata.uri unless given: the engine default (p2p) or --config decides");
        assertNull(b.segmentId);
        assertNull(b.localServerName);
        assertNull(b.metricsPort);
        assertNull(b.configFile);
        assertNull(b.settings);
        assertEquals(false, b.checkConsistency);
        assertEquals(false, b.json);
    }

    @Test
    void mooncakeFlagNamesAndSizeSuffixes() {
        TeBench b = parse("--mode=initiator", "--operation=write", "--protocol=shm", "--block_size=64k",
                "--batch_size=128", "--threads=12", "--duration=2.5", "--buffer_size=1g",
                "--metadata_server=etcd://127.0.0.1:2379", "--local_server_name=node-a", "--segment_id=10.0.0.1:15000",
                "--check_consistency", "--json", "--metrics_port=9100", "--config=/tmp/engine.json",
                "--set", "slice.size=1m", "--set=transports.tcp.lanes=2");
        assertEquals(TeBench.Mode.INITIATOR, b.mode);
        assertEquals(TeBench.Operation.WRITE, b.operation);
        assertEquals("shm", b.protocol);
        assertEquals(65536, b.blockSize);
        assertEquals(128, b.batchSize);
        assertEquals(12, b.threads);
        assertEquals(Duration.ofMillis(2500), b.duration, "a plain number is seconds, as in Mooncake's te-bench");
        assertEquals(Duration.ofMillis(500), parse("--duration=500ms").duration);
        assertEquals(1L << 30, b.bufferSize);
        assertEquals("etcd://127.0.0.1:2379", b.metadataServer);
        assertEquals("node-a", b.localServerName);
        assertEquals("10.0.0.1:15000", b.segmentId);
        assertTrue(b.checkConsistency);
        assertTrue(b.json);
        assertEquals(9100, b.metricsPort);
        assertEquals(Path.of("/tmp/engine.json"), b.configFile);
        assertEquals(Map.of("slice.size", "1m", "transports.tcp.lanes", "2"), b.settings);

        assertEquals(1L << 20, parse("--block_size=1m").blockSize);
        assertEquals(1L << 20, parse("--block-size", "1MiB").blockSize);
        assertEquals(4096, parse("--block_size=4096").blockSize);
        assertEquals(TeBench.Mode.TARGET, parse("--mode=TARGET").mode);
    }

    @Test
    void unknownFlagIsAUsageErrorNamingIt() {
        Run r = run("--bogus=1");
        assertEquals(2, r.status());
        assertTrue(r.err().startsWith("bench: Unknown option: '--bogus=1'"), r.err());
        assertTrue(r.err().contains("Run 'bench --help' for the flags."), r.err());
        assertTrue(r.err().lines().count() <= 4, "no wall of usage text: " + r.err());
    }

    @Test
    void misspelledFlagGetsASuggestion() {
        Run r = run("--block_sise=4k");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--block_size"), "suggests the flag meant: " + r.err());
    }

    @Test
    void badSizeNamesTheFlagAndTheValue() {
        Run r = run("--block_size=lots");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--block-size"), r.err());
        assertTrue(r.err().contains("'lots'"), r.err());
    }

    @Test
    void badModeListsTheChoices() {
        Run r = run("--mode=server");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--mode"), r.err());
        assertTrue(r.err().toLowerCase().contains("target"), r.err());
    }

    @Test
    void initiatorNeedsASegment() {
        Run r = run("--mode=initiator");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--segment_id is required for --mode=initiator"), r.err());
    }

    @Test
    void nonPositiveNumbersAreRejected() {
        Run r = run("--threads=0", "--batch_size=-1", "--duration=0");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--threads must be > 0"), r.err());
        assertTrue(r.err().contains("--batch_size must be > 0"), r.err());
        assertTrue(r.err().contains("--duration must be > 0"), r.err());
        Run word = run("--warmup=soon");
        assertEquals(2, word.status());
        assertTrue(word.err().contains("expected a duration such as 500ms"), word.err());
    }

    @Test
    void bufferTooSmallForOneBatchPerThread() {
        Run r = run("--buffer_size=1m", "--block_size=64k", "--batch_size=32", "--threads=2");
        assertEquals(2, r.status());
        assertTrue(r.err().contains("--buffer_size too small"), r.err());
        assertTrue(r.err().contains("4194304 bytes"), r.err());
    }

    @Test
    void helpListsTheFlags() {
        Run r = run("--help");
        assertEquals(0, r.status());
        for (String flag : new String[]{"--mode", "--operation", "--protocol", "--block_size", "--batch_size",
                "--threads", "--duration", "--buffer_size", "--metadata_server", "--local_server_name", "--segment_id",
                "--check_consistency", "--json", "--metrics_port", "--config", "--set"}) {
            assertTrue(r.out().contains(flag), "help lacks " + flag);
        }
    }

    @Test
    void rangePerThreadIsWholeBatchesAndCapped() {
        assertEquals(128L << 20, InitiatorWorkload.rangePerThread(256L << 20, 2, 65536, 32));
        // 100 blocks per thread fit 3 whole batches of 32
        assertEquals(96 * 4096L, InitiatorWorkload.rangePerThread(200 * 4096L, 2, 4096, 32));
        assertEquals(0, InitiatorWorkload.rangePerThread(31 * 4096L, 1, 4096, 32));
        // tiny blocks in a big buffer: at most MAX_SLOTS_PER_THREAD blocks each
        assertEquals((long) InitiatorWorkload.MAX_SLOTS_PER_THREAD * 64,
                InitiatorWorkload.rangePerThread(1L << 30, 1, 64, 32));
        // overflow of block x batch is "does not fit", not a negative range
        assertEquals(0, InitiatorWorkload.rangePerThread(1L << 40, 1, Long.MAX_VALUE / 2, 32));
    }
}
