package org.tent4j.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.tent4j.api.Batch;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;

/** What the README tells a user to do with the engine, built against the BOM alone: WRITE to a peer, READ it back. */
class EngineTransferTest {
    private static final int SIZE = 4 << 20;

    static EngineConfig tcpOnly() {
        return EngineConfig.builder().set(EngineConfig.METADATA_URI, "p2p").set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSPORTS_ENABLED, "tcp").set(EngineConfig.TRANSFER_TIMEOUT, "10s").build();
    }

    @Test
    void aWriteToAPeerEngineAndItsReadBackCarryTheSameBytes() throws InterruptedException {
        try (TransferEngine engine = TransferEngine.create(tcpOnly());
             TransferEngine peer = TransferEngine.create(tcpOnly())) {
            RegisteredMemory local = engine.allocate(2L * SIZE, Location.CPU, Permission.READ_WRITE);
            RegisteredMemory remote = peer.allocate(SIZE, Location.CPU, Permission.READ_WRITE);
            MemorySegment source = local.segment().asSlice(0, SIZE);
            MemorySegment readBack = local.segment().asSlice(SIZE, SIZE);
            byte[] pattern = new byte[SIZE];
            new Random(26).nextBytes(pattern);
            MemorySegment.copy(MemorySegment.ofArray(pattern), 0, source, 0, SIZE);

            SegmentHandle target = engine.openSegment(peer.segmentName());   // p2p: the peer's host:port
            long base = engine.segmentInfo(target).buffers().get(0).address();
            run(engine, TransferRequest.write(source, target, base));
            assertEquals(crc(source), crc(remote.segment()), "the peer holds the bytes written to it");
            run(engine, TransferRequest.read(readBack, target, base));
            assertEquals(crc(source), crc(readBack), "the bytes read back are the bytes written");
        }
    }

    private static void run(TransferEngine engine, TransferRequest request) throws InterruptedException {
        try (Batch batch = engine.allocateBatch(1)) {
            batch.submit(List.of(request));
            TransferStatus status = batch.await(Duration.ofSeconds(10));
            assertEquals(TransferState.COMPLETED, status.state(), status.error() + ": " + status.message());
            assertEquals(SIZE, status.bytesTransferred(), "bytes transferred");
        }
    }

    static long crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asByteBuffer());
        return crc.getValue();
    }
}
