package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.MasterClient;
import org.tent4j.store.master.Command;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;

/** Slow calls from any caller (a pathological regex) cost bounded time on a real master and stall no other caller. */
class SlowCallsTest {
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private MasterServer serve() throws Exception {
        MasterServer server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 0);
        open.add(server);
        server.master().mount("node", new SegmentSpec("seg", "engine-seg", "host", 1L << 32, 1 << 20));
        return server;
    }

    private MasterClient client(MasterServer server, Duration timeout) {
        MasterClient c = new MasterClient("127.0.0.1:" + server.port(), timeout);
        open.add(c);
        return c;
    }

    private static void put(StoreMaster master, String key) {
        Command.PutTicket t = master.putStart("node", key, 64, ReplicateConfig.defaults(), "host");
        master.putEnd("node", key, t.putId());
    }

    @Test
    void catastrophicRegexReturnsWhileOtherClientsAreServed() throws Exception {
        MasterServer server = serve();
        StoreMaster master = server.master();
        // a backtracking matcher spends seconds per key on these ((.*a){20} against n a's and a '!': C(n, 20) paths)
        put(master, "a".repeat(28) + "!");
        put(master, "a".repeat(29) + "!");
        put(master, "a".repeat(25));
        for (int i = 0; i < 8; i++) {
            put(master, "honest/" + i);
        }
        List<Command<?>> logged = Collections.synchronizedList(new ArrayList<>());
        master.state().journal(e -> logged.add(e.command()));
        MasterClient honest = client(server, Duration.ofSeconds(5));
        honest.ping("node", 0);
        MasterClient attacker = client(server, Duration.ofSeconds(120));

        long start = System.nanoTime();
        CompletableFuture<Long> removal = CompletableFuture.supplyAsync(() -> attacker.removeByRegex("(.*a){20}", false));
        int served = 0;
        // each honest call must be answered within its 5 s timeout for as long as the removal runs (a master that
        // matches under its ordering point answers none of them until the match ends)
        while (!removal.isDone() || served < 10) {
            honest.getReplicaList("honest/" + served % 8);
            assertFalse(honest.ping("node", 0));
            served++;
        }
        assertEquals(1, removal.get(60, TimeUnit.SECONDS), "only the 25 a's match whole");
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "the removal took "
                + (System.nanoTime() - start) / 1_000_000 + " ms");
        // the log carries the matched keys, not the pattern, so a replay runs no match under the ordering point
        List<Command.RemoveKeys> removals = logged.stream().filter(c -> c instanceof Command.RemoveKeys)
                .map(c -> (Command.RemoveKeys) c).toList();
        assertEquals(List.of(new Command.RemoveKeys(List.of("a".repeat(25)), false)), removals);
    }

    @Test
    void unsupportedPatternsAreRefusedNamingThePattern() throws Exception {
        MasterClient c = client(serve(), Duration.ofSeconds(10));
        for (String regex : List.of("(a)\\1", "a(?=b)", "(")) {
            StoreException e = assertThrows(StoreException.class, () -> c.removeByRegex(regex, false));
            assertEquals(StoreError.INVALID_PARAMS, e.error(), e.getMessage());
            assertTrue(e.getMessage().contains("bad regex '" + regex + "'"), e.getMessage());
        }
    }
}
