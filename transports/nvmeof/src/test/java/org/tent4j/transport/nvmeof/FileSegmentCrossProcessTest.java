package org.tent4j.transport.nvmeof;

import java.io.BufferedReader;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.io.TempDir;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A same-host peer's file segment across two processes: the owner publishes its file over the peer-to-peer control
 * plane; this engine fetches the descriptor, opens the file by the published path (under its peer_roots) and reads and
 * writes it; the owner reads back what landed through its own engine.
 */
class FileSegmentCrossProcessTest {
    @TempDir
    Path dir;

    /**
     * nvmeof: this engine opens the owner's file itself. tcp (remote file segments, issue 12): this engine runs no file
     * transport at all; the owner's engine reads and writes its file on this engine's behalf.
     */
    @ParameterizedTest
    @CsvSource({"nvmeof, nvmeof", "'nvmeof,tcp', tcp"})
    void aPeerProcessReadsAndWritesTheOwnersFile(String ownerTransports, String transports) throws Exception {
        Path file = dir.resolve("owned.bin");
        String java = ProcessHandle.current().info().command().orElseThrow();
        Process child = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-Xmx128m",
                "-cp", System.getProperty("java.class.path"), FileOwnerProcess.class.getName(), file.toString(), ownerTransports)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try (PrintWriter toChild = new PrintWriter(child.outputWriter(StandardCharsets.US_ASCII), true)) {
            BufferedReader fromChild = child.errorReader(StandardCharsets.US_ASCII);
            String ready = CompletableFuture.supplyAsync(() -> next(fromChild, "READY ")).get(60, TimeUnit.SECONDS);
            assertNotNull(ready, "owner exited before READY");
            String segmentName = ready.split(" ")[1];
            long base = Long.parseLong(ready.split(" ")[2]);
            byte[] content = new byte[8 << 20];
            new Random(5).nextBytes(content);
            try (TransferEngine e = TransferEngine.create(EngineConfig.builder()
                    .set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                    .set(EngineConfig.TRANSPORTS_ENABLED, transports)
                    .set(EngineConfig.WORKERS, 2)
                    .setAll(transports.equals("nvmeof") ? Map.of("transports.nvmeof.peer_roots", dir.toString()) : Map.of())
                    .build())) {
                SegmentHandle owner = e.openSegment(segmentName);
                RegisteredMemory m = e.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
                MemorySegment got = m.segment().asSlice(0, (1 << 20) + 333);
                assertEquals(transports, e.explain(TransferRequest.read(got, owner, base + 4097)).transport());
                TransferStatus r = e.transfer(TransferRequest.read(got, owner, base + 4097));
                assertEquals(TransferState.COMPLETED, r.state(), r::toString);
                assertEquals(FileSegmentEngineTest.crc(MemorySegment.ofArray(content).asSlice(4097, got.byteSize())),
                        FileSegmentEngineTest.crc(got));

                MemorySegment put = m.segment().asSlice(2 << 20, 2 << 20);
                FileSegmentEngineTest.fill(put, 77);
                TransferStatus w = e.transfer(TransferRequest.write(put, owner, base + (3 << 20)));
                assertEquals(TransferState.COMPLETED, w.state(), w::toString);
                toChild.println("CRC " + (3 << 20) + " " + (2 << 20));
                String crc = CompletableFuture.supplyAsync(() -> next(fromChild, "CRC ", "ERROR ")).get(60, TimeUnit.SECONDS);
                assertEquals("CRC " + FileSegmentEngineTest.crc(put), crc, "the owner reads back what the peer wrote");

                TransferStatus outside = e.transfer(TransferRequest.read(got, owner, base + (8 << 20) - 100));
                assertEquals(ErrorCode.OUT_OF_BOUNDS, outside.error(), outside::toString);
            }
        } finally {
            child.destroy();
            assertTrue(child.waitFor(30, TimeUnit.SECONDS) || child.destroyForcibly().waitFor(10, TimeUnit.SECONDS));
        }
    }

    /** The next line starting with one of {@code prefixes} (a JVM may print warnings on stderr too). */
    private static String next(BufferedReader r, String... prefixes) {
        try {
            for (String line; (line = r.readLine()) != null; ) {
                for (String p : prefixes) {
                    if (line.startsWith(p)) {
                        return line;
                    }
                }
            }
            return null;
        } catch (java.io.IOException e) {
            return null;
        }
    }
}
