package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferPlan;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.runtime.launch.HostStaging;

/**
 * Staging (issue 12): npu memory (a test platform whose copies are real) that the only transport, inproc (cpu->cpu),
 * cannot move goes through pinned host buffers, chosen by the selector, shown by explain, bytes intact both ways.
 */
class HostStagingTest {
    private static final long MIB = 1 << 20;
    private Arena arena;

    @BeforeEach
    void setUp() {
        StagingTestPlatform.enabled = true;
        arena = Arena.ofShared();
    }

    @AfterEach
    void tearDown() {
        StagingTestPlatform.enabled = false;
        arena.close();
    }

    private static TransferEngine engine(String name) {
        return TransferEngine.create(EngineConfig.builder().environment(Map.of())
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.METADATA_URI, "memory://staging-" + name.split("-")[0])
                .set(EngineConfig.SEGMENT_NAME, name)
                .set(EngineConfig.TRANSPORTS_ENABLED, "inproc")
                .set(EngineConfig.SLICE_SIZE, "256k")
                .build());
    }

    private static long crc(MemorySegment m) {
        CRC32C c = new CRC32C();
        c.update(m.asByteBuffer());
        return c.getValue();
    }

    private static void fill(MemorySegment m, long seed) {
        byte[] b = new byte[(int) m.byteSize()];
        new Random(seed).nextBytes(b);
        MemorySegment.copy(b, 0, m, ValueLayout.JAVA_BYTE, 0, b.length);
    }

    @Test
    void npuMemoryIsStagedThroughHostBuffersBothWays() {
        try (TransferEngine target = engine("rw-target"); TransferEngine initiator = engine("rw-initiator")) {
            RegisteredMemory remote = target.allocate(32 * MIB, Location.CPU, Permission.READ_WRITE);
            MemorySegment npu = arena.allocate(40 * MIB, 4096);
            initiator.register(npu, Location.device(MemoryKind.NPU, 0), Permission.LOCAL_ONLY);
            SegmentHandle seg = initiator.openSegment("rw-target");

            // several chunks (4 MiB each) and a ragged end, so more chunks than staging buffers and a partial last one
            long length = 18 * MIB + 5;
            MemorySegment src = npu.asSlice(3, length);
            fill(src, 11);
            TransferRequest write = TransferRequest.write(src, seg, remote.address() + 777);
            TransferPlan plan = initiator.explain(write);
            assertNull(plan.error(), plan::toString);
            assertEquals("inproc", plan.transport(), plan::toString);
            assertNotNull(plan.staging(), plan::toString);
            assertTrue(plan.staging().startsWith("npu:0 -> host staging") && plan.staging().endsWith("-> inproc -> cpu"),
                    plan::toString);
            assertTrue(plan.candidates().stream().anyMatch(c -> !c.usable() && c.reason().contains("cannot move npu->cpu")),
                    plan::toString);
            assertEquals((int) ((length + HostStaging.CHUNK - 1) / HostStaging.CHUNK), plan.slices());

            long copiedBefore = StagingTestPlatform.COPIED.get();
            TransferStatus w = initiator.transfer(write);
            assertEquals(TransferState.COMPLETED, w.state(), w::toString);
            assertEquals(length, w.bytesTransferred());
            assertEquals(crc(src), crc(remote.segment().asSlice(777, length)));
            assertEquals(length, StagingTestPlatform.COPIED.get() - copiedBefore, "every byte copied device->host once");

            // read it back into another npu range: remote -> host staging -> npu
            MemorySegment dst = npu.asSlice(20 * MIB, length);
            TransferStatus r = initiator.transfer(TransferRequest.read(dst, seg, remote.address() + 777));
            assertEquals(TransferState.COMPLETED, r.state(), r::toString);
            assertEquals(crc(src), crc(dst));
            assertEquals(4 * HostStaging.CHUNK, StagingTestPlatform.HOST_ALLOCATED.get(), "one pool of pinned buffers");
        }
        assertEquals(0, StagingTestPlatform.HOST_ALLOCATED.get(), "staging buffers freed with the engine");
    }

    @Test
    void memoryNoPlatformCanCopyIsRejectedNotStaged() {
        try (TransferEngine target = engine("none-target"); TransferEngine initiator = engine("none-initiator")) {
            RegisteredMemory remote = target.allocate(MIB, Location.CPU, Permission.READ_WRITE);
            MemorySegment rocm = arena.allocate(MIB, 4096);
            initiator.register(rocm, Location.device(MemoryKind.ROCM, 0), Permission.LOCAL_ONLY);
            SegmentHandle seg = initiator.openSegment("none-target");
            TransferRequest write = TransferRequest.write(rocm, seg, remote.address());
            TransferPlan plan = initiator.explain(write);
            assertNull(plan.staging(), plan::toString);
            assertNotNull(plan.error(), plan::toString);
            TransferStatus s = initiator.transfer(write);
            assertEquals(ErrorCode.NO_TRANSPORT, s.error(), s::toString);
        }
    }
}
