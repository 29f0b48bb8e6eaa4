package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitFailure;
import static org.tent4j.transport.tcp.TcpFixture.fillRandom;
import static org.tent4j.transport.tcp.TcpFixture.finishedWithFailure;
import static org.tent4j.transport.tcp.TcpFixture.slice;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/**
 * After {@code unregisterBuffer} returns the engine may free the memory, so by then no socket may read from or write
 * into it any more, whatever the peers are doing.
 */
class UnregisterTest {
    private static final byte GUARD = (byte) 0x5A;

    @Test
    void unregisterWaitsUntilInFlightAccessesAreDoneAndLaterOnesAreRefused() {
        try (TcpFixture f = new TcpFixture()) {
            int size = 8 << 20;
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(size, 64));
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(size, 64), Permission.READ_WRITE);
            fillRandom(remote.segment(), 8);
            List<TestSlice> slices = new ArrayList<>();
            try (PeerConnection conn = f.connect(remote)) {
                for (int i = 0; i < 32; i++) {
                    TestSlice s = slice(i % 4 == 0 ? Opcode.WRITE : Opcode.READ, local, 0, remote, 0, size);
                    slices.add(s);
                    conn.post(s);
                }
                f.b.unregisterBuffer(remote);
                // from here the memory is the engine's to free: nothing may land in it any more. A request that
                // passed the retired check just before unregister may count itself in for an instant before it is
                // refused, so the count is read once it settles; the guard pattern is the proof that matters.
                remote.segment().fill(GUARD);
                f.contextB.memory().unregister(remote);
                for (TestSlice s : slices) {
                    if (finishedWithFailure(s)) {
                        TransferException e = awaitFailure(s);
                        assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, e.code(), e.getMessage());
                    }
                }
                assertEquals(0, f.b.awaitPinsReleased(remote, Duration.ofSeconds(10)),
                        "unregisterBuffer returned while a socket still held the buffer");
                assertEquals(-1, remote.segment().mismatch(f.arena.allocate(size).fill(GUARD)),
                        "a WRITE landed in the buffer after unregisterBuffer returned");
                TestSlice late = slice(Opcode.READ, local, 0, remote, 0, 4096);
                conn.post(late);
                assertEquals(ErrorCode.ADDRESS_NOT_REGISTERED, awaitFailure(late).code());
                assertTrue(conn.isOpen(), "refused accesses do not break the connection");
            }
        }
    }

    @Test
    void peerThatStopsReadingItsAnswersLosesItsConnectionWhenTheBufferGoes() throws IOException, InterruptedException {
        try (TcpFixture f = new TcpFixture(Map.of(), Map.of(), Duration.ofMillis(300))) {
            int size = 1 << 20;
            TestLocalMemory.Buffer remote = f.registerAtTarget(f.arena.allocate(size, 64), Permission.READ_WRITE);
            try (RawClient c = new RawClient(f.b.port())) {
                // 256 MiB of READ answers that this client never reads; the kernel takes a few MiB of them, the
                // rest wait in the target's send queue as views of the buffer until the connection goes
                byte[] requests = new byte[256 * 32];
                for (int i = 0; i < 256; i++) {
                    System.arraycopy(RawClient.header(RawClient.MAGIC, 1, 1, 0, i + 1, remote.address(), size), 0,
                            requests, i * 32, 32);
                }
                c.send(requests);
                // the event that matters: the target's send queue passed max_queued_bytes (16 MiB of 1 MiB answers)
                // and it stopped reading; the client never reads, so those answers and their pins stay until the
                // buffer goes
                assertTrue(f.b.awaitReadPauses(1, Duration.ofSeconds(10)), "the target never stopped reading");
                assertTrue(f.b.pinsHeld(remote) > 0, "the target should be holding unsent answers, holds "
                        + f.b.pinsHeld(remote));
                f.b.unregisterBuffer(remote);
                assertEquals(0, f.b.pinsHeld(remote));
                // the client is cut off: it gets what was already sent, then the end of the stream
                long drained = c.drainToEnd();
                assertTrue(drained < 256L * (size + 16), "the connection was closed before everything was sent");
            }
        }
    }
}
