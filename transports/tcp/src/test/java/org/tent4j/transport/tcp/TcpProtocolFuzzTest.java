package org.tent4j.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.transport.tcp.TcpFixture.awaitDone;
import static org.tent4j.transport.tcp.TcpFixture.crc;
import static org.tent4j.transport.tcp.TcpFixture.fillRandom;
import static org.tent4j.transport.tcp.TcpFixture.slice;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.PeerConnection;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestSlice;

/**
 * Protocol-aware fuzzing of the tcp data port: generated frames, most of them well-formed headers with random
 * opcodes, addresses (inside, at the edges of and far from registrations) and lengths, some with bad magic, version
 * or flags, WRITE payloads cut off by closing the connection, and plain garbage. Afterwards the target must be alive,
 * the guard bytes around a registered buffer and a read-only buffer unchanged, and honest transfers intact (CRC).
 *
 * <p>The suite runs a short seeded run; the long one is
 * {@code -Dtest=TcpProtocolFuzzTest -Dtent4j.fuzz.frames=1000000 [-Dtent4j.fuzz.seed=N]} (docs/PERFORMANCE.md).
 */
class TcpProtocolFuzzTest {
    private static final int SIZE = 256 << 10;
    private static final int MAX_FRAME = 1 << 20;

    @Test
    void generatedFramesNeitherCrashTheTargetNorTouchMemoryTheyMayNot() throws Exception {
        long frames = Long.getLong("tent4j.fuzz.frames", 5_000);
        long seed = Long.getLong("tent4j.fuzz.seed", 0x7E47_F022L);
        System.out.printf("[fuzz] tcp data port: %d frames, seed %d%n", frames, seed);
        try (TcpFixture f = new TcpFixture(java.util.Map.of(), java.util.Map.of("max_frame", Integer.toString(MAX_FRAME)))) {
            TcpFixture.Guarded open = new TcpFixture.Guarded(f.arena, SIZE, 64 << 10);
            TestLocalMemory.Buffer writable = f.registerAtTarget(open.middle, Permission.READ_WRITE);
            TestLocalMemory.Buffer readOnly = f.registerAtTarget(f.arena.allocate(SIZE, 64), Permission.READ_ONLY);
            fillRandom(readOnly.segment(), 5);
            long readOnlyCrc = crc(readOnly.segment());
            TestLocalMemory.Buffer honest = f.registerAtTarget(f.arena.allocate(SIZE, 64), Permission.READ_WRITE);
            TestLocalMemory.Buffer local = f.registerAtInitiator(f.arena.allocate(2 * SIZE, 64));
            long[] targets = {writable.address(), readOnly.address(), open.beforeAddress(), open.afterAddress(), 0};

            SplittableRandom r = new SplittableRandom(seed);
            long sent = 0;
            long connections = 0;
            long started = System.nanoTime();
            try (PeerConnection good = f.connect(honest)) {
                while (sent < frames) {
                    sent += fuzzOneConnection(f.b.port(), r, targets, frames - sent);
                    if (++connections % 50 == 0) {
                        roundTrip(good, local, honest, r.nextLong());
                    }
                }
                roundTrip(good, local, honest, r.nextLong());
            }
            open.assertGuardsIntact();
            assertEquals(readOnlyCrc, crc(readOnly.segment()), "a READ_ONLY buffer was written");
            assertEquals(0, f.b.awaitPinsReleased(writable, Duration.ofSeconds(10)));
            assertEquals(0, f.b.awaitPinsReleased(readOnly, Duration.ofSeconds(10)));
            System.out.printf("[fuzz] tcp data port: %d frames on %d connections in %.1f s, target alive, guards and "
                    + "read-only buffer intact, honest transfers intact%n", sent, connections,
                    (System.nanoTime() - started) / 1e9);
        }
    }

    /** Sends up to {@code budget} generated frames on one connection while a second thread drains its answers. */
    private static long fuzzOneConnection(int port, SplittableRandom r, long[] targets, long budget) throws Exception {
        int frames = (int) Math.min(budget, 1 + r.nextInt(400));
        try (RawClient c = new RawClient(port)) {
            CompletableFuture<Long> drained = CompletableFuture.supplyAsync(() -> {
                try {
                    return c.drainToEnd();
                } catch (IOException e) {
                    throw new IllegalStateException("the target kept a fuzzed connection open", e);
                }
            });
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            boolean cut = false;
            int i = 0;
            for (; i < frames && !cut; i++) {
                cut = frame(out, r, targets);
                if (out.size() > 64 << 10) {
                    if (!send(c, out)) {
                        break; // the target closed the connection (a protocol violation): fine
                    }
                }
            }
            send(c, out);
            if (r.nextInt(8) == 0) {
                c.abort();
            } else {
                c.socket().shutdownOutput();
            }
            drained.get(60, TimeUnit.SECONDS);
            return i;
        }
    }

    private static boolean send(RawClient c, ByteArrayOutputStream out) {
        try {
            c.send(out.toByteArray());
            return true;
        } catch (IOException closed) {
            return false;
        } finally {
            out.reset();
        }
    }

    /** Appends one generated frame; whether it was cut off (the connection must end after it). */
    private static boolean frame(ByteArrayOutputStream out, SplittableRandom r, long[] targets) {
        int kind = r.nextInt(100);
        if (kind < 3) {
            byte[] garbage = new byte[1 + r.nextInt(64)];
            r.nextBytes(garbage);
            out.writeBytes(garbage);
            return false;
        }
        int magic = kind < 5 ? r.nextInt() : RawClient.MAGIC;
        int version = kind < 7 ? r.nextInt(256) : 1;
        int op = kind < 12 ? r.nextInt(256) : 1 + r.nextInt(2);
        int flags = kind < 14 ? r.nextInt(65536) : 0;
        long address = switch (r.nextInt(6)) {
            case 0 -> r.nextLong();
            case 1 -> targets[r.nextInt(targets.length)] - 1 - r.nextInt(64);
            default -> targets[r.nextInt(targets.length)] + r.nextInt(SIZE + 128) - 64;
        };
        long length = switch (r.nextInt(10)) {
            case 0 -> 0;
            case 1 -> r.nextLong();
            case 2 -> MAX_FRAME + r.nextInt(3) - 1;
            case 3 -> r.nextInt(SIZE + 1);
            default -> 1 + r.nextInt(4096);
        };
        out.writeBytes(RawClient.header(magic, version, op, flags, r.nextLong(), address, length));
        if (op == 2 && length > 0 && length <= MAX_FRAME) {
            boolean whole = length <= 64 << 10 && r.nextInt(20) != 0;
            byte[] payload = new byte[whole ? (int) length : (int) r.nextLong(Math.min(length, 64 << 10))];
            r.nextBytes(payload);
            out.writeBytes(payload);
            return !whole;
        }
        return false;
    }

    private static void roundTrip(PeerConnection good, TestLocalMemory.Buffer local, TestLocalMemory.Buffer honest,
                                  long seed) {
        int n = 64 << 10;
        fillRandom(local.segment().asSlice(0, n), seed);
        TestSlice w = slice(Opcode.WRITE, local, 0, honest, 100, n);
        good.post(w);
        awaitDone(w);
        TestSlice rd = slice(Opcode.READ, local, SIZE, honest, 100, n);
        good.post(rd);
        awaitDone(rd);
        assertEquals(crc(local.segment().asSlice(0, n)), crc(local.segment().asSlice(SIZE, n)),
                "an honest transfer came back changed");
        assertTrue(good.isOpen());
    }
}
