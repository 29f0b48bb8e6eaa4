package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.Test;

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
import org.tent4j.runtime.metadata.DescriptorCodec;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.SegmentDescriptor;

/**
 * A hostile tcp target (a plain socket speaking transports/tcp/PROTOCOL.md) denies the first slice of a READ and
 * then keeps streaming payload: for the other slices, and after them for requests nobody sent. The application's
 * buffer must never be written once the task is reported ended: it is freed, memory is allocated again and filled
 * with a guard pattern, and the pattern is intact after the hostile peer sent everything it had.
 */
class HostileTargetTest {
    private static final int SLICE = 64 << 10;
    private static final int SLICES = 8;
    private static final long FAKE_BASE = 0x7f00_0000_0000L;

    @Test
    void aDeniedSliceDoesNotLetTheRestWriteIntoFreedMemory() throws Exception {
        String store = "memory://hostile-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        try (ServerSocket server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
            publishFakeTarget(store, server.getLocalPort());
            CompletableFuture<TransferStatus> reported = new CompletableFuture<>();
            CompletableFuture<Void> allSent = new CompletableFuture<>();
            CompletableFuture<Void> lateSent = new CompletableFuture<>();
            CompletableFuture<Void> freed = new CompletableFuture<>();
            Thread hostile = Thread.ofPlatform().name("hostile-target").daemon().start(() -> {
                try (Socket s = server.accept()) {
                    serve(s, reported, allSent, freed, lateSent);
                } catch (Exception e) {
                    allSent.completeExceptionally(e);
                    lateSent.completeExceptionally(e);
                }
            });
            try (TransferEngine initiator = TransferEngine.create(EngineConfig.builder().environment(Map.of())
                    .set(EngineConfig.CONTROL_HOST, "127.0.0.1").set(EngineConfig.METADATA_URI, store)
                    .set(EngineConfig.TRANSPORTS_ENABLED, "tcp").set(EngineConfig.SLICE_SIZE, "64k")
                    .set(EngineConfig.TRANSFER_TIMEOUT, "10s")
                    .set("transports.tcp.lanes", 1).build())) {
                SegmentHandle seg = initiator.openSegment("hostile");
                Arena arena = Arena.ofShared();
                MemorySegment app = arena.allocate((long) SLICE * SLICES, 4096);
                RegisteredMemory reg = initiator.register(app, Location.CPU, Permission.READ_WRITE);
                initiator.submit(TransferRequest.read(app, seg, FAKE_BASE)).whenComplete((st, e) -> {
                    if (e != null) {
                        reported.completeExceptionally(e);
                    } else {
                        reported.complete(st);
                    }
                });
                TransferStatus st = reported.get(30, TimeUnit.SECONDS);
                assertEquals(TransferState.FAILED, st.state(), st.toString());
                assertEquals(ErrorCode.PERMISSION_DENIED, st.error(), st.toString());
                assertTrue(st.message().contains("hostile says no"), st.message());
                // reported only after the peer had answered every slice it was sent (then it waits for the free)
                assertTrue(allSent.isDone(), "the task was reported while slices were still streaming in");

                // the application frees its buffer and reuses memory
                initiator.unregister(reg);
                arena.close();
                try (Arena again = Arena.ofShared()) {
                    MemorySegment guard = again.allocate((long) SLICE * SLICES * 2, 4096);
                    guard.fill((byte) 0x5A);
                    freed.complete(null);
                    lateSent.get(30, TimeUnit.SECONDS);
                    byte[] seen = guard.toArray(ValueLayout.JAVA_BYTE);
                    byte[] expected = new byte[seen.length];
                    Arrays.fill(expected, (byte) 0x5A);
                    assertTrue(Arrays.equals(expected, seen), "memory reused after the task ended was written");
                }
                // the engine is alive and still answers
                assertEquals("hostile", initiator.segmentInfo(seg).name());
            }
            hostile.join(TimeUnit.SECONDS.toMillis(30));
        }
    }

    /** The hostile peer: deny request 1, stream the rest, then after the buffer is freed stream answers nobody asked for. */
    private static void serve(Socket s, CompletableFuture<TransferStatus> reported, CompletableFuture<Void> allSent,
                              CompletableFuture<Void> freed, CompletableFuture<Void> lateSent) throws Exception {
        s.setTcpNoDelay(true);
        DataInputStream in = new DataInputStream(s.getInputStream());
        OutputStream out = s.getOutputStream();
        byte[] payload = new byte[SLICE];
        Arrays.fill(payload, (byte) 0xEE);
        long lastId = 0;
        for (int answered = 0; answered < SLICES; answered++) {
            ByteBuffer req = ByteBuffer.wrap(in.readNBytes(32)).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(0x544A3454, req.getInt(0));
            assertEquals(1, req.get(5), "READ");
            long id = req.getLong(8);
            long length = req.getLong(24);
            lastId = id;
            if (answered == 0) {
                byte[] text = "hostile says no".getBytes(StandardCharsets.UTF_8);
                out.write(response(4, id, text));
                out.flush();
                // A correct initiator cannot report the task now: its siblings are in flight. One that does lets the
                // application free the buffer, and this peer then streams into it.
                try {
                    reported.get(300, TimeUnit.MILLISECONDS);
                    freed.get(30, TimeUnit.SECONDS);
                } catch (TimeoutException expected) {
                    // the right outcome: keep streaming
                }
                continue;
            }
            out.write(response(0, id, null));
            out.write(payload, 0, (int) length);
            out.flush();
        }
        allSent.complete(null);
        freed.get(30, TimeUnit.SECONDS);
        // answers to requests that were never sent, each with a full payload
        try {
            for (int i = 1; i <= SLICES; i++) {
                out.write(response(0, lastId + i, null));
                out.write(payload);
            }
            out.flush();
            // the initiator drops the lane on the first unexpected answer; wait for it to hang up
            InputStream raw = s.getInputStream();
            while (raw.read() >= 0) {
                // nothing more is expected; drain until closed
            }
        } catch (IOException closedByInitiator) {
            // the initiator reset the connection: also fine
        }
        lateSent.complete(null);
    }

    private static byte[] response(int status, long id, byte[] text) {
        ByteBuffer b = ByteBuffer.allocate(16 + (text == null ? 0 : 4 + text.length)).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0x524A3454).putInt(status).putLong(id);
        if (text != null) {
            b.putInt(text.length).put(text);
        }
        return b.array();
    }

    private static void publishFakeTarget(String uri, int port) {
        MetadataStoreProvider p = ServiceLoader.load(MetadataStoreProvider.class).stream().map(ServiceLoader.Provider::get)
                .filter(x -> x.schemes().contains("memory")).findFirst().orElseThrow();
        MetadataStore m = p.open(URI.create(uri), Map.of());
        SegmentDescriptor d = SegmentDescriptor.builder().name("hostile").machineId("another-machine")
                .host("127.0.0.1").controlPort(1).transports(List.of("tcp"))
                .transportAttributes(Map.of("tcp", Map.of("port", Integer.toString(port), "max_frame", Integer.toString(SLICE))))
                .buffers(List.of(BufferDescriptor.builder().address(FAKE_BASE).length((long) SLICE * SLICES)
                        .location(Location.CPU).permission(Permission.READ_WRITE).transports(List.of("tcp"))
                        .attributes(Map.of("tcp", Map.of())).build()))
                .version(1).build();
        m.put("tent4j/default/segments/hostile", DescriptorCodec.encode(d), Duration.ZERO);
    }
}
