package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.testkit.Poll;

/**
 * The master's connection limits (issue 29): connections that never authenticate hold a few slots of their own and
 * cannot lock out a token holder; without a token, connections beyond the limit are closed at accept and the limit
 * frees up as they close. Real master server, raw sockets and real clients.
 */
class ConnectionLimitsTest {
    private static final StoreSecurity MEMBER = StoreSecurity.NONE.withToken("cluster-secret-1".getBytes(StandardCharsets.UTF_8));
    private static final Duration LIMIT = Duration.ofSeconds(30);
    /** Polled: the master needs the core. */
    private static final Duration PAUSE = Duration.ofMillis(5);
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    private MasterServer master(StoreSecurity security, MasterServer.Limits limits) throws IOException {
        MasterServer s = MasterServer.start(new StoreMaster(MasterConfig.defaults(), StoreClock.system()), "127.0.0.1", 0,
                0, r -> { }, security, ClientCredentials.random(), null, limits);
        open.add(s);
        return s;
    }

    private Socket silent(MasterServer m) throws IOException {
        Socket s = new Socket();
        open.add(s);
        s.connect(new InetSocketAddress("127.0.0.1", m.port()));
        s.setSoTimeout(30_000);
        return s;
    }

    /** Whether the master closed {@code s}: its answer (HTTP/2 settings, if any) read to the end. */
    private static boolean closedByMaster(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        try {
            while (in.read() >= 0) {
                // the server's preface
            }
            return true;
        } catch (java.net.SocketException reset) {
            return true;
        }
    }

    @Test
    void silentConnectionsCannotLockOutATokenHolder() throws Exception {
        MasterServer m = master(MEMBER, new MasterServer.Limits(4, 3, 16, 1 << 20));
        List<Socket> flood = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            flood.add(silent(m));
        }
        Poll.until("all but the 3 newest silent connections are closed", LIMIT, PAUSE, () -> m.evictedUnprovenConnections() == 17);
        for (int i = 0; i < 17; i++) {
            assertTrue(closedByMaster(flood.get(i)), "silent connection " + i + " closed");
        }
        // the honest client's connection evicts the oldest silent one and proves itself with its first call
        MasterClient honest = new MasterClient("127.0.0.1:" + m.port(), Duration.ofSeconds(10), MEMBER);
        open.add(honest);
        honest.serviceReady();
        String id = honest.register();
        assertTrue(!id.isEmpty());
        assertEquals(18, m.evictedUnprovenConnections());
        assertEquals(1, m.openConnections(), "only the proven connection counts against the limit");
        // a later flood evicts silent connections only: the proven one goes on answering
        for (int i = 0; i < 10; i++) {
            silent(m);
        }
        // two silent ones were left waiting beside the honest one: 12 waiting, 3 slots
        Poll.until("the second flood evicts its own", LIMIT, PAUSE, () -> m.evictedUnprovenConnections() == 27);
        honest.serviceReady();
        assertEquals(0, m.refusedConnections());
    }

    @Test
    void withoutATokenConnectionsBeyondTheLimitAreClosedAtAcceptUntilOneCloses() throws Exception {
        MasterServer m = master(StoreSecurity.NONE, new MasterServer.Limits(3, 1, 16, 1 << 20));
        List<Socket> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            held.add(silent(m));
        }
        Poll.until("three connections open", LIMIT, PAUSE, () -> m.openConnections() == 3);
        Socket fourth = silent(m);
        assertTrue(closedByMaster(fourth), "the fourth connection is closed at accept");
        assertEquals(1, m.refusedConnections());
        MasterClient late = new MasterClient("127.0.0.1:" + m.port(), Duration.ofSeconds(2), StoreSecurity.NONE);
        open.add(late);
        assertThrows(StoreException.class, late::serviceReady, "no room for a client either");

        held.getFirst().close();
        Poll.until("the closed connection frees its place", LIMIT, PAUSE, () -> m.openConnections() == 2);
        MasterClient client = new MasterClient("127.0.0.1:" + m.port(), Duration.ofSeconds(10), StoreSecurity.NONE);
        open.add(client);
        client.serviceReady();
        assertEquals(3, m.openConnections());
    }
}
