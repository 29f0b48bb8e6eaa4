package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.fillRandom;
import static org.tent4j.transport.tcp.TcpFixture.slice;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.netty.channel.epoll.Epoll;
import io.netty.channel.uring.IoUring;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.tent4j.api.ConfigException;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/** The same bytes over every Netty I/O engine, with payloads landing in registered memory on each. */
class IoModeTest {

    @ParameterizedTest
    @ValueSource(strings = {"nio", "epoll", "io_uring"})
    void everyIoModeMovesBytesIntactAndLandsPayloadsInPlace(String mode) {
        Assumptions.assumeTrue(!mode.equals("epoll") || Epoll.isAvailable(), "epoll unavailable here");
        Assumptions.assumeTrue(!mode.equals("io_uring") || IoUring.isAvailable(), "io_uring unavailable here");
        Map<String, String> options = Map.of("io_mode", mode, "lanes", "2", "io_threads", "1");
        try (TcpFixture f = new TcpFixture(options, options)) {
            assertEquals(mode, f.a.ioMode());
            int big = 4 << 20;
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(2L * big + 64, 64));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(big + 64, 64), Permission.READ_WRITE);
            fillRandom(local.segment(), 21);
            try (PeerConnection conn = f.connect(remote)) {
                TestSlice w = slice(Opcode.WRITE, local, 1, remote, 3, big);
                conn.post(w);
                awaitDone(w);
                TestSlice r = slice(Opcode.READ, local, big + 8, remote, 3, big);
                conn.post(r);
                awaitDone(r);
                assertEquals(-1, local.segment().asSlice(1, big).mismatch(local.segment().asSlice(big + 8, big)));
                assertTrue(f.b.payloadBytesLanded() > big / 2, mode + ": WRITE payload landed in place: "
                        + f.b.payloadBytesLanded() + " of " + big);
                assertTrue(f.a.payloadBytesLanded() > big / 2, mode + ": READ payload landed in place: "
                        + f.a.payloadBytesLanded() + " of " + big);

                // many small pipelined slices, answered in order per lane
                List<TestSlice> small = new ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    TestSlice s = slice(i % 2 == 0 ? Opcode.WRITE : Opcode.READ, local, i * 1000L, remote,
                            i * 1000L + 64, 999);
                    small.add(s);
                    conn.post(s);
                }
                for (TestSlice s : small) {
                    awaitDone(s);
                }
            }
            MemorySegment remoteBytes = remote.segment();
            for (int i = 0; i < 200; i += 2) {
                assertEquals(-1, local.segment().asSlice(i * 1000L, 999).mismatch(remoteBytes.asSlice(i * 1000L + 64,
                        999)), "small WRITE " + i);
            }
            for (int i = 1; i < 200; i += 2) {
                assertEquals(-1, remoteBytes.asSlice(i * 1000L + 64, 999).mismatch(local.segment().asSlice(i * 1000L,
                        999)), "small READ " + i);
            }
        }
    }

    @Test
    void unknownIoModeIsAConfigError() {
        try (var ctx = TcpFixture.context("a", Map.of("io_mode", "dpdk"))) {
            ConfigException e = assertThrows(ConfigException.class, () -> TcpFixture.PROVIDER.create(ctx));
            assertEquals("transports.tcp.io_mode", e.key());
        }
    }
}
