package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.rpc.MasterServer;

/** Clean exits (issue 28): a closed client is gone from the master at once and never counted expired; sessions close. */
class ClientExitTest {
    static long crc(byte[] v) {
        CRC32C c = new CRC32C();
        c.update(v);
        return c.getValue();
    }

    @Test
    void aClosedClientUnmountsLeavesAndIsNeverCountedExpired() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        try (LoopbackStore store = LoopbackStore.start(now::get)) {
            StoreMaster master = store.server().master();
            StoreClient leaving = StoreClient.builder(store.engine(), store.address()).clock(now::get)
                    .heartbeatInterval(Duration.ZERO).connect();
            StoreClient staying = StoreClient.builder(store.engine(), store.address()).clock(now::get)
                    .heartbeatInterval(Duration.ZERO).connect();
            try {
                SegmentSpec gone = leaving.contribute(1 << 20);
                SegmentSpec kept = staying.contribute(1 << 20);
                Random rnd = new Random(28);
                List<byte[]> values = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    byte[] v = new byte[4096];
                    rnd.nextBytes(v);
                    values.add(v);
                    // two replicas: one on each segment
                    assertEquals(PutResult.Status.STORED, staying.put("exit/" + i, v, ReplicateConfig.replicas(2)).status());
                }
                assertEquals(2, master.state().stats().clients());
                assertEquals(2, master.segments().size());

                leaving.close();
                // at once, before any TTL: its segment unmounted, its record gone, every value still read from the other
                assertEquals(List.of(kept.id()), master.segments().stream().map(MasterState.SegmentView::id).toList());
                assertFalse(master.segments().stream().anyMatch(s -> s.id().equals(gone.id())));
                assertEquals(1, master.state().stats().clients());
                for (int i = 0; i < values.size(); i++) {
                    byte[] got = staying.get("exit/" + i);
                    assertEquals(crc(values.get(i)), crc(got), "exit/" + i);
                    assertArrayEquals(values.get(i), got);
                }

                // the client TTL (10 s) passes: the staying client is heard from, the one that left is not expired
                now.addAndGet(Duration.ofSeconds(11).toNanos());
                staying.heartbeat();
                Command.TickReport r = master.tick();
                assertEquals(List.of(), r.clientsExpired());
                assertEquals(0, master.state().stats().clientsExpired());
                assertEquals(1, master.state().stats().clients());
            } finally {
                staying.close();
            }
            assertEquals(0, master.state().stats().clients());
            assertEquals(0, master.segments().size());
            assertEquals(0, master.state().stats().clientsExpired());
        }
    }

    @Test
    void sessionsCloseAndAClosedGetSessionReadsNothing() throws Exception {
        try (LoopbackStore store = LoopbackStore.start()) {
            StoreClient node = store.client(1 << 20);
            StoreClient user = store.client(1 << 20);
            try {
                // room beyond the reservations the user is granted: a segment they fill is over the high watermark,
                // and eviction would take the values this test reads back
                node.contribute(64 << 20);
                byte[] v = new byte[1000];
                new Random(5).nextBytes(v);
                user.put("s/0", v);
                var dst = user.engine().allocate(1000, org.tent4j.api.Location.CPU, org.tent4j.api.Permission.LOCAL_ONLY);
                GetSession kept;
                try (GetSession s = user.getSession(List.of("s/0"))) {
                    assertEquals(1000, s.read(0, dst.segment()));
                    assertEquals(crc(v), crc(dst.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)));
                    kept = s;
                }
                StoreException e = assertThrows(StoreException.class, () -> kept.read(0, dst.segment()));
                assertEquals(StoreError.UNAVAILABLE_IN_CURRENT_STATUS, e.error());
                assertTrue(e.getMessage().contains("closed"), e.getMessage());
                assertThrows(StoreException.class, () -> kept.readBatch(0, List.of(dst.segment())));
                // the copying batch put, beside putBatchFrom: heap arrays in, CRC-equal values out
                List<byte[]> batch = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    byte[] b = new byte[100 + i * 1000];
                    new Random(i).nextBytes(b);
                    batch.add(b);
                }
                List<String> keys = List.of("b/0", "b/1", "b/2", "b/3", "b/4");
                user.putBatch(keys, batch, ReplicateConfig.defaults()).forEach(o -> assertEquals(PutResult.Status.STORED, o.get().status()));
                for (int i = 0; i < keys.size(); i++) {
                    assertEquals(crc(batch.get(i)), crc(user.get(keys.get(i))), keys.get(i));
                }
                try (PutSession p = user.putSession(List.of("s/1"), List.of(10L), ReplicateConfig.defaults())) {
                    assertEquals(1, p.size());
                }
                assertFalse(user.exists("s/1"), "closing the put session revoked it");
                user.engine().unregister(dst);
            } finally {
                user.close();
                node.close();
            }
        }
    }

    /**
     * A ping that fails once its client is closing (the close interrupts one in flight, or the master is already gone)
     * is no warning: every `tent4j store bench` ended with one. A master that stops answering a client still in use is.
     */
    @Test
    void aHeartbeatThatFailsOnceTheClientClosesIsNoWarning() throws Exception {
        Logger log = (Logger) LoggerFactory.getLogger(Heartbeats.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        log.addAppender(lines);
        MasterServer server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 3_600_000);
        try (TransferEngine engine = TransferEngine.create(EngineConfig.builder()
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1").build())) {
            String address = "127.0.0.1:" + server.port();
            StoreClient client = StoreClient.builder(engine, address).heartbeatInterval(Duration.ZERO).connect();
            server.close();
            client.heartbeat();
            List<String> warned = warnings(lines);
            assertEquals(1, warned.size(), warned.toString());
            assertTrue(warned.getFirst().startsWith("heartbeat to master " + address + " failed"), warned.getFirst());
            client.close();
            client.heartbeat();
            assertEquals(warned, warnings(lines), "a ping of a closed client failed: not a warning");
        } finally {
            log.detachAppender(lines);
            server.close();
        }
    }

    private static List<String> warnings(ListAppender<ILoggingEvent> lines) {
        return lines.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                .map(ILoggingEvent::getFormattedMessage).toList();
    }
}
