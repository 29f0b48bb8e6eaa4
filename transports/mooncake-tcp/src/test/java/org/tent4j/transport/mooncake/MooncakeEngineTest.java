package org.tent4j.transport.mooncake;

import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.api.TransportInfo;
import org.tent4j.runtime.metadata.DescriptorCodec;
import org.tent4j.runtime.metadata.InMemoryMetadataStore;
import org.tent4j.spi.TimeSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.mooncake.Tent4jSide.crc;
import static org.tent4j.transport.mooncake.Tent4jSide.fill;

/**
 * Two real engines that find the plugin through ServiceLoader and move CRC-checked bytes both ways over the Mooncake
 * wire, chosen by {@code require("mooncake-tcp")}; requests larger than a slice travel as several Mooncake requests.
 */
class MooncakeEngineTest {
    private static final long SIZE = (8L << 20) + 4096;
    private final List<AutoCloseable> open = new ArrayList<>();

    private static EngineConfig.Builder config() {
        return EngineConfig.builder().environment(Map.of()).set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                .set(EngineConfig.TRANSFER_TIMEOUT, "10s").set(EngineConfig.SLICE_SIZE, "1m");
    }

    private TransferEngine engine(EngineConfig config) {
        TransferEngine e = TransferEngine.create(config);
        open.add(e);
        return e;
    }

    @AfterEach
    void close() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    @Test
    void crcCheckedBytesBothWaysBetweenTwoEngines() {
        TransferEngine target = engine(config().build());
        TransferEngine initiator = engine(config().build());
        RegisteredMemory remote = target.allocate(SIZE, Location.CPU, Permission.READ_WRITE);
        RegisteredMemory local = initiator.allocate(2 * SIZE, Location.CPU, Permission.READ_WRITE);
        fill(local.segment(), 3);
        fill(remote.segment(), 4);
        SegmentHandle seg = initiator.openSegment(target.segmentName());
        for (long size : new long[]{1, 4095, 64 << 10, (4L << 20) + 3}) {
            MemorySegment src = local.segment().asSlice(5, size);
            TransferRequest write = TransferRequest.builder(Opcode.WRITE, src, seg, remote.address() + 7)
                    .require(MooncakeTcpTransportProvider.ID).build();
            assertEquals(MooncakeTcpTransportProvider.ID, initiator.explain(write).transport());
            TransferStatus w = initiator.transfer(write);
            assertEquals(TransferState.COMPLETED, w.state(), w.message());
            assertEquals(crc(src), crc(remote.segment().asSlice(7, size)), "WRITE of " + size);

            MemorySegment dst = local.segment().asSlice(SIZE + 11, size);
            TransferStatus r = initiator.transfer(TransferRequest.builder(Opcode.READ, dst, seg,
                    remote.address() + 4096 + 13).require(MooncakeTcpTransportProvider.ID).build());
            assertEquals(TransferState.COMPLETED, r.state(), r.message());
            assertEquals(crc(remote.segment().asSlice(4096 + 13, size)), crc(dst), "READ of " + size);
        }
    }

    /**
     * tent4j's engine against a Mooncake target (the reference-built fake), found through the descriptor JSON that
     * target publishes. The runtime does not read Mooncake's keys yet, so the test does that step: it converts the
     * JSON and puts the result under tent4j's own key in an in-JVM store; everything after openSegment is the engine.
     */
    @Test
    void anEngineReadsAndWritesAMooncakeTargetThroughItsPublishedDescriptor() throws Exception {
        try (FakeMooncakeTarget fake = new FakeMooncakeTarget(4L << 20)) {
            for (int i = 0; i < fake.memory.length; i++) {
                fake.memory[i] = (byte) (i * 17 + (i >>> 10));
            }
            MooncakeSegmentDescriptor mooncake = MooncakeSegmentDescriptor.parse("mooncake/ram/mooncake-node",
                    fake.descriptorJson(2).getBytes(StandardCharsets.UTF_8));
            InMemoryMetadataStore.open(URI.create("memory://mooncake-bridge"), TimeSource.SYSTEM).put(
                    "tent4j/default/segments/" + mooncake.name(),
                    DescriptorCodec.encode(mooncake.toSegmentDescriptor("127.0.0.1", "mooncake-machine")), Duration.ZERO);
            TransferEngine initiator = engine(config().set(EngineConfig.METADATA_URI, "memory://mooncake-bridge").build());
            RegisteredMemory local = initiator.allocate(8L << 20, Location.CPU, Permission.READ_WRITE);
            fill(local.segment(), 9);
            SegmentHandle seg = initiator.openSegment(mooncake.name());
            long size = (3L << 20) + 5;

            MemorySegment src = local.segment().asSlice(1, size);
            TransferStatus w = initiator.transfer(TransferRequest.builder(Opcode.WRITE, src, seg,
                    FakeMooncakeTarget.BASE + 7).require(MooncakeTcpTransportProvider.ID).build());
            assertEquals(TransferState.COMPLETED, w.state(), w.message());
            assertEquals(crc(src), crc(MemorySegment.ofArray(fake.memory).asSlice(7, size)), "WRITE into Mooncake");
            assertEquals(4, fake.headers.size(), "1 MiB slices: each one Mooncake request");

            MemorySegment dst = local.segment().asSlice(4L << 20, size);
            TransferStatus r = initiator.transfer(TransferRequest.builder(Opcode.READ, dst, seg,
                    FakeMooncakeTarget.BASE + 7).require(MooncakeTcpTransportProvider.ID).build());
            assertEquals(TransferState.COMPLETED, r.state(), r.message());
            assertEquals(crc(src), crc(dst), "READ back from Mooncake");
        }
    }

    @Test
    void aSecuredEngineRunsItOnlyWhenToldTheWireIsUnauthenticated() {
        TransferEngine secured = engine(config().set("security.token", "s3cret").build());
        TransportInfo info = secured.transports().stream()
                .filter(t -> t.id().equals(MooncakeTcpTransportProvider.ID)).findFirst().orElseThrow();
        assertFalse(info.available(), info.toString());
        assertTrue(info.cause().contains("no authentication"), info.cause());

        TransferEngine accepted = engine(config().set("security.token", "s3cret")
                .set("transports.mooncake-tcp.allow_unauthenticated", "true").build());
        assertTrue(accepted.transports().stream().anyMatch(t -> t.id().equals(MooncakeTcpTransportProvider.ID)
                && t.available()), accepted.transports().toString());
    }
}
