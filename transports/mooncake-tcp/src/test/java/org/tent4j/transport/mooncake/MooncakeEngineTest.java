package org.tent4j.transport.mooncake;

import java.lang.foreign.MemorySegment;
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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.mooncake.Tent4jSide.crc;
import static org.tent4j.transport.mooncake.Tent4jSide.fill;

/**
 * Two real engines that find the plugin through ServiceLoader and move CRC-checked bytes both ways over the Mooncake
 * wire, chosen by {@code require("mooncake-tcp")}; requests larger than a slice travel as several Mooncake requests.
 * An engine against a Mooncake engine: {@link MooncakeOpenSegmentTest}.
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
