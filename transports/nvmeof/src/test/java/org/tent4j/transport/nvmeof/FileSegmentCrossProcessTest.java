package org.tent4j.transport.nvmeof;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;

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
import org.tent4j.testkit.ChildJvm;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
        try (ChildJvm child = ChildJvm.builder(FileOwnerProcess.class).heap("128m")
                .args(file.toString(), ownerTransports).start()) {
            String ready = child.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT);
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
                child.send("CRC " + (3 << 20) + " " + (2 << 20));
                String crc = child.awaitLine("CRC ", ChildJvm.DEFAULT_TIMEOUT);
                assertEquals("CRC " + FileSegmentEngineTest.crc(put), crc, "the owner reads back what the peer wrote");

                TransferStatus outside = e.transfer(TransferRequest.read(got, owner, base + (8 << 20) - 100));
                assertEquals(ErrorCode.OUT_OF_BOUNDS, outside.error(), outside::toString);
            }
        }
    }
}
