package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.rpc.ClientCredentials;
import org.tent4j.store.rpc.MasterServer;

/**
 * Mount proof (issue 29): a master with an engine of its own reads back the nonce a mounting client wrote at its
 * segment's base, so a client cannot point the store at another engine's memory. Real master, clients and engines.
 */
class MountProofTest {
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private TransferEngine engine() {
        TransferEngine e = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
        open.add(e);
        return e;
    }

    private StoreClient client(MasterServer m) {
        StoreClient c = StoreClient.builder(engine(), "127.0.0.1:" + m.port()).heartbeatInterval(Duration.ZERO)
                .stagingBytes(1 << 20).connect();
        open.add(c);
        return c;
    }

    @Test
    void aMountNamingMemoryTheCallerCannotWriteIsRefusedAndNothingIsMounted() throws Exception {
        TransferEngine masterEngine = engine();
        MasterServer m = MasterServer.start(new StoreMaster(MasterConfig.defaults(), StoreClock.system()), "127.0.0.1", 0,
                0, r -> { }, StoreSecurity.NONE, ClientCredentials.random(), () -> masterEngine);
        open.add(m);
        StoreClient victim = client(m);
        // an honest contribution passes the proof: the client wrote the nonce, the master read it back
        SegmentSpec victimSeg = victim.contribute(4 << 20);
        Random rnd = new Random(529);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            byte[] v = new byte[8192];
            rnd.nextBytes(v);
            values.add(v);
            assertEquals(PutResult.Status.STORED, victim.put("proof/" + i, v, ReplicateConfig.replicas(1)).status());
        }
        StoreClient attacker = client(m);
        String a = attacker.clientId();
        long objects = m.master().state().objectCount();

        // the victim's engine and memory, under a segment id of the attacker's: the attacker gets a nonce but cannot
        // write it there
        for (SegmentSpec forged : List.of(
                new SegmentSpec("evil-1", victimSeg.engineSegment(), victimSeg.host(), victimSeg.base(), victimSeg.size()),
                new SegmentSpec("evil-2", victimSeg.engineSegment(), victimSeg.host(), victimSeg.base() + (1 << 20), 1 << 20))) {
            byte[] nonce = attacker.master().mountChallenge(a, forged);
            assertEquals(32, nonce.length);
            StoreException e = assertThrows(StoreException.class, () -> attacker.master().mount(a, forged, 1L));
            assertEquals(StoreError.PERMISSION_DENIED, e.error(), e.getMessage());
            assertTrue(e.getMessage().contains("not the nonce") && e.getMessage().contains(forged.id()), e.getMessage());
        }
        // an engine segment nobody serves cannot prove anything either
        SegmentSpec nowhere = new SegmentSpec("evil-3", "127.0.0.1:1", "127.0.0.1", 4096, 1 << 20);
        StoreException e = assertThrows(StoreException.class, () -> attacker.master().mount(a, nowhere, 1L));
        assertEquals(StoreError.PERMISSION_DENIED, e.error(), e.getMessage());
        assertTrue(e.getMessage().contains("could not read the mount proof back"), e.getMessage());

        assertEquals(List.of(victimSeg.id()), m.master().segments().stream().map(MasterState.SegmentView::id).toList());
        assertEquals(objects, m.master().state().objectCount());
        for (int i = 0; i < values.size(); i++) {
            assertArrayEquals(values.get(i), attacker.get("proof/" + i), "proof/" + i);
        }
        // the attacker's own memory it can prove, and it is mounted
        attacker.contribute(1 << 20);
        assertEquals(2, m.master().segments().size());
    }
}
