package org.tent4j.samples.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportContext;
import org.tent4j.testkit.conformance.ConformanceSlice;
import org.tent4j.testkit.conformance.ConformanceSlice.Outcome;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestTransportContext;
import org.tent4j.testkit.ManualClock;

/**
 * Slice deadlines are in the engine's clock ({@code TransportContext#clock()}), which need not agree with
 * {@link System#nanoTime()}: a test drives it here, against a peer that accepts the connection and never answers.
 */
class UdsClockTest {
    private static final String MACHINE = "clock-machine";
    /** Hang guard; far below the hour by which the engine's clock and the system's disagree. */
    private static final long AWAIT_SECONDS = 20;

    private final UdsTransportProvider provider = new UdsTransportProvider();
    private final Arena arena = Arena.ofShared();
    private final List<SocketChannel> accepted = new CopyOnWriteArrayList<>();
    private final CountDownLatch requestArrived = new CountDownLatch(1);
    private Path dir;
    private ServerSocketChannel silent;
    private TestTransportContext context;
    private Transport transport;

    @BeforeEach
    void silentPeer() throws IOException {
        dir = Files.createTempDirectory("uds-clock");
        silent = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        silent.bind(UnixDomainSocketAddress.of(dir.resolve("silent.sock")));
        Thread.ofPlatform().daemon().start(() -> {
            try {
                while (true) {
                    SocketChannel ch = silent.accept();
                    accepted.add(ch);
                    Thread.ofPlatform().daemon().start(() -> {
                        try {
                            if (ch.read(ByteBuffer.allocate(1)) > 0) {
                                requestArrived.countDown();
                            }
                        } catch (IOException e) {
                            // closed by the test
                        }
                    });
                }
            } catch (IOException e) {
                // closed by the test
            }
        });
    }

    @AfterEach
    void close() throws IOException {
        if (transport != null) {
            transport.close();
        }
        if (context != null) {
            context.close();
        }
        silent.close();
        for (SocketChannel ch : accepted) {
            ch.close();
        }
        arena.close();
        Files.deleteIfExists(dir.resolve("silent.sock"));
        Files.deleteIfExists(dir);
    }

    @Test
    void deadlineIsReadInTheEnginesClockBeforeSending() throws Exception {
        // the engine's clock runs an hour ahead of the system's, so the deadline has passed only in the engine's time
        ManualClock clock = new ManualClock(System.nanoTime() + TimeUnit.HOURS.toNanos(1));
        PeerConnection conn = connect(clock);
        ConformanceSlice late = write(conn, clock.nanoTime() - 1);
        Outcome o = late.result().get(AWAIT_SECONDS, TimeUnit.SECONDS);
        assertEquals(ErrorCode.TIMEOUT, o.code(), o.toString());
        assertTrue(o.message().endsWith("deadline passed before it was sent"), o.message());
    }

    @Test
    void watchdogJudgesAnOverdueReplyInTheEnginesClock() throws Exception {
        ManualClock clock = new ManualClock(System.nanoTime());
        PeerConnection conn = connect(clock);
        // an hour away in both clocks: only the engine's clock moving past it can fail the slice within the wait
        ConformanceSlice slow = write(conn, clock.nanoTime() + TimeUnit.HOURS.toNanos(1));
        assertTrue(requestArrived.await(AWAIT_SECONDS, TimeUnit.SECONDS), "the request was never sent");
        clock.advance(TimeUnit.HOURS.toNanos(1) + 1); // past it: a deadline is missed only once time is beyond it
        Outcome o = slow.result().get(AWAIT_SECONDS, TimeUnit.SECONDS);
        assertEquals(ErrorCode.TIMEOUT, o.code(), o.toString());
        assertTrue(o.message().endsWith("no reply from the peer by the deadline"), o.message());
        assertEquals(1, slow.settlements());
    }

    private PeerConnection connect(TimeSource clock) {
        context = new TestTransportContext("a", MACHINE, UdsTransportProvider.ID, provider.options(),
                Map.of("paths", "1"), Duration.ofSeconds(3));
        transport = provider.create(context.clock(clock));
        SegmentDescriptor peer = SegmentDescriptor.builder().name("b").machineId(MACHINE).host("127.0.0.1")
                .controlPort(0).transports(List.of(UdsTransportProvider.ID))
                .transportAttributes(Map.of(UdsTransportProvider.ID, Map.of(UdsTransport.SOCKET, dir.resolve("silent.sock").toString())))
                .buffers(List.of()).version(1).build();
        return transport.connect(peer);
    }

    private ConformanceSlice write(PeerConnection conn, long deadline) {
        TestLocalMemory.Buffer local = context.memory().register(arena.allocate(4096, 64), Permission.READ_WRITE);
        // the peer never looks at it; any buffer it could have published will do
        BufferDescriptor remote = local.describe(UdsTransportProvider.ID, Map.of());
        ConformanceSlice s = new ConformanceSlice(Opcode.WRITE, local, 0, remote, remote.address(), 4096, 0,
                deadline);
        conn.post(s);
        return s;
    }
}
