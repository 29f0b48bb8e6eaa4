package org.tent4j.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import picocli.CommandLine;

/**
 * te-bench against the real runtime and transports: short runs (1 s, small buffers) that check every byte, so a
 * transport that loses, misplaces or fails to deliver data makes them fail.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TeBenchEndToEndTest {
    private static final String[] SMALL = {"--duration=1", "--warmup=0", "--buffer_size=8m", "--block_size=64k",
            "--batch_size=8", "--threads=2", "--check_consistency", "--json"};

    @ParameterizedTest(name = "loopback {0} {1}")
    @CsvSource({"tcp, read", "tcp, write", "shm, read", "shm, write"})
    void loopbackMovesCorrectBytes(String protocol, String operation) throws Exception {
        TeBenchOptionsTest.Run r = TeBenchOptionsTest.run(concat(SMALL, "--mode=loopback", "--protocol=" + protocol,
                "--operation=" + operation));
        assertEquals(0, r.status(), () -> "stdout:\n" + r.out() + "\nstderr:\n" + r.err());
        JsonNode json = lastJsonLine(r.out());
        assertEquals(0, json.get("errors").asLong(), r.out());
        assertTrue(json.get("bytes").asLong() > 0, r.out());
        assertEquals(0, json.get("bytes").asLong() % 65536, "whole blocks only: " + r.out());
        assertEquals(protocol, json.get("protocol").asText());
        assertEquals(operation, json.get("operation").asText());
        // the engines run the transport under test and no other (nor probe the others' device libraries)
        assertTrue(r.out().contains("(transports [" + protocol + "])"), r.out());
        assertTrue(json.get("p50_us").asDouble() > 0, r.out());
        assertTrue(json.get("p999_us").asDouble() >= json.get("p50_us").asDouble(), r.out());
        // Ran its duration: the measured window ends at the last counted completion, which can precede the deadline by
        // one window's latency (a 130 ms stall was seen on a loaded CI box), so "ran" means more than half of it.
        assertTrue(json.get("duration_s").asDouble() > 0.5, r.out());
    }

    @Test
    void targetAndInitiatorInOneJvm() throws Exception {
        TeBench target = new TeBench();
        CommandLine targetCl = TeBench.commandLine(target);
        LineQueue targetOut = new LineQueue();
        StringWriter targetErr = new StringWriter();
        targetCl.setOut(new PrintWriter(targetOut, true));
        targetCl.setErr(new PrintWriter(targetErr, true));
        CompletableFuture<Integer> targetRun = CompletableFuture.supplyAsync(() -> targetCl.execute(
                "--mode=target", "--protocol=tcp", "--buffer_size=8m"));
        try {
            String segment = null;
            for (String line; segment == null && (line = targetOut.lines.poll(30, TimeUnit.SECONDS)) != null; ) {
                if (line.startsWith("--segment_id=")) {
                    segment = line.substring("--segment_id=".length());
                }
            }
            assertTrue(segment != null && !segment.isBlank(), "target printed no --segment_id line: " + targetErr);
            for (String op : new String[]{"read", "write"}) {
                TeBenchOptionsTest.Run r = TeBenchOptionsTest.run(concat(SMALL, "--mode=initiator",
                        "--protocol=tcp", "--operation=" + op, "--segment_id=" + segment));
                assertEquals(0, r.status(), () -> "stdout:\n" + r.out() + "\nstderr:\n" + r.err());
                JsonNode json = lastJsonLine(r.out());
                assertEquals(0, json.get("errors").asLong(), r.out());
                assertTrue(json.get("bytes").asLong() > 0, r.out());
            }
        } finally {
            target.requestStop();
        }
        assertEquals(0, targetRun.get(20, TimeUnit.SECONDS), targetErr::toString);
    }

    @Test
    void transportsNamedBySetWinOverTheProtocol() {
        TeBenchOptionsTest.Run r = TeBenchOptionsTest.run("--mode=loopback", "--protocol=shm", "--duration=1",
                "--buffer_size=8m", "--set", "transports.enabled=tcp");
        assertEquals(TeBench.EXIT_SETUP_FAILED, r.status(), r.err());
        assertTrue(r.err().contains("--protocol=shm is available but not enabled"), r.err());
    }

    @Test
    void unknownProtocolIsASetupFailureNamingIt() {
        TeBenchOptionsTest.Run r = TeBenchOptionsTest.run("--protocol=carrier-pigeon", "--duration=1",
                "--buffer_size=8m");
        assertEquals(TeBench.EXIT_SETUP_FAILED, r.status(), r.err());
        assertTrue(r.err().contains("--protocol=carrier-pigeon"), r.err());
        assertTrue(r.err().contains("tcp"), "lists the transports found: " + r.err());
    }

    @Test
    void unknownSegmentIsASetupFailureNamingIt() {
        TeBenchOptionsTest.Run r = TeBenchOptionsTest.run("--mode=initiator", "--segment_id=127.0.0.1:1",
                "--duration=1", "--buffer_size=8m");
        assertEquals(TeBench.EXIT_SETUP_FAILED, r.status(), r.err());
        assertTrue(r.err().contains("127.0.0.1:1"), r.err());
    }

    /** A writer that hands over each completed line, so a test can wait for the target's --segment_id line. */
    private static final class LineQueue extends Writer {
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final StringBuilder current = new StringBuilder();

        @Override
        public synchronized void write(char[] buf, int off, int len) {
            for (int i = off; i < off + len; i++) {
                if (buf[i] == '\n') {
                    lines.add(current.toString());
                    current.setLength(0);
                } else if (buf[i] != '\r') {
                    current.append(buf[i]);
                }
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    private static JsonNode lastJsonLine(String out) throws Exception {
        String[] lines = out.strip().split("\n");
        String last = lines[lines.length - 1];
        assertTrue(last.startsWith("{") && last.endsWith("}"), "last line is not JSON: " + last);
        return new ObjectMapper().readTree(last);
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
