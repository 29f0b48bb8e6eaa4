package org.tent4j.runtime.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * Protocol-aware fuzzing of the control port: generated frames with random kinds, ids (among them the id of a call
 * in flight), services, caller names, payload sizes and length prefixes (short, long, above max_frame), and garbage.
 * Afterwards the node must be alive and answer honestly, a call in flight must have been completed by its own peer
 * only, and no handler may have seen a request above its service's limit.
 *
 * <p>Long run: {@code -Dtest=ControlPlaneFuzzTest -Dtent4j.fuzz.frames=1000000 [-Dtent4j.fuzz.seed=N]}.
 */
class ControlPlaneFuzzTest {
    private static final String[] SERVICES = {"echo", "notify", "segment.get", "", "x".repeat(300)};

    @Test
    void generatedFramesNeitherCrashTheNodeNorAnswerAnotherConnectionsCall() throws Exception {
        long frames = Long.getLong("tent4j.fuzz.frames", 5_000);
        long seed = Long.getLong("tent4j.fuzz.seed", 0xC0_47201L);
        System.out.printf("[fuzz] control port: %d frames, seed %d%n", frames, seed);
        ExecutorService workers = Executors.newFixedThreadPool(2);
        AtomicLong oversized = new AtomicLong();
        try (ControlPlaneNode node = new ControlPlaneNode("127.0.0.1", 0, workers,
                ControlPlaneTrustTest.settings(Map.of("control.max_frame", "64k")));
             ServerSocket peer = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            node.localSegment("a");
            node.serve("echo", (caller, req) -> req);
            node.serve("notify", 1024, (caller, req) -> {
                if (req.length > 1024) {
                    oversized.incrementAndGet();
                }
                return new byte[0];
            });
            // a call in flight to a peer that answers only at the end; the fuzzer knows its id
            CompletableFuture<byte[]> inFlight = node.callAsync("127.0.0.1", peer.getLocalPort(), "segment.get", new byte[0]);
            try (RawControlClient honestPeer = new RawControlClient(peer.accept())) {
                long callId = honestPeer.read().id();
                SplittableRandom r = new SplittableRandom(seed);
                long sent = 0;
                long connections = 0;
                long started = System.nanoTime();
                while (sent < frames) {
                    sent += fuzzOneConnection(node.port(), r, callId, frames - sent);
                    connections++;
                }
                assertFalse(inFlight.isDone(), "a fuzzed connection completed another connection's call");
                honestPeer.send(RawControlClient.REPLY, callId, "segment.get", "b", "descriptor".getBytes());
                assertArrayEquals("descriptor".getBytes(), inFlight.get(10, TimeUnit.SECONDS));
                byte[] echo = node.call("127.0.0.1", node.port(), "echo", "alive".getBytes(), Duration.ofSeconds(10));
                assertArrayEquals("alive".getBytes(), echo);
                assertEquals(0, oversized.get(), "a handler saw a request above its limit");
                assertTrue(node.badFrames() > 0 && node.strayReplies() > 0, "the generator reached the checks");
                System.out.printf("[fuzz] control port: %d frames on %d connections in %.1f s, node alive, call in "
                        + "flight answered by its own peer only (%d stray replies ignored, %d bad frames)%n", sent,
                        connections, (System.nanoTime() - started) / 1e9, node.strayReplies(), node.badFrames());
            }
        } finally {
            workers.shutdownNow();
        }
    }

    private static long fuzzOneConnection(int port, SplittableRandom r, long callId, long budget) throws Exception {
        int frames = (int) Math.min(budget, 1 + r.nextInt(200));
        try (RawControlClient c = new RawControlClient(port)) {
            CompletableFuture<Void> drained = CompletableFuture.runAsync(() -> {
                try {
                    c.socket.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
                } catch (IOException reset) {
                    // a reset ends the stream as well
                }
            });
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (int i = 0; i < frames; i++) {
                frame(out, r, callId);
            }
            try {
                c.sendRaw(out.toByteArray());
            } catch (IOException closed) {
                // the node dropped the connection (a bad frame): fine
            }
            c.socket.shutdownOutput();
            drained.get(60, TimeUnit.SECONDS);
            return frames;
        }
    }

    private static void frame(ByteArrayOutputStream out, SplittableRandom r, long callId) {
        int kind = r.nextInt(100);
        if (kind < 3) {
            byte[] garbage = new byte[1 + r.nextInt(64)];
            r.nextBytes(garbage);
            out.writeBytes(garbage);
            return;
        }
        byte frameKind = (byte) (kind < 8 ? r.nextInt(256) : r.nextInt(3));
        long id = r.nextInt(4) == 0 ? callId : r.nextLong();
        String service = SERVICES[r.nextInt(SERVICES.length)];
        String caller = r.nextInt(4) == 0 ? "b" : "c" + r.nextInt(1000);
        int size = switch (r.nextInt(8)) {
            case 0 -> 1024 + r.nextInt(3) - 1;
            case 1 -> r.nextInt(70_000);
            default -> r.nextInt(64);
        };
        byte[] payload = new byte[size];
        r.nextBytes(payload);
        byte[] frame = RawControlClient.encode(frameKind, id, service, caller, payload);
        switch (r.nextInt(20)) {
            case 0 -> ByteBuffer.wrap(frame).putInt(0, r.nextInt()); // a lying length prefix
            case 1 -> frame = java.util.Arrays.copyOf(frame, r.nextInt(frame.length)); // cut off
            default -> { }
        }
        out.writeBytes(frame);
    }
}
