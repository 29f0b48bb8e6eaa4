package org.tent4j.store.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.MasterConfig;

/** Ids that reach the master's output, log and /metrics are refused at the RPC unless printable and short. */
class IdValidationTest {

    @Test
    void mountRefusesIdsThatCouldForgeALineNamingTheField() throws Exception {
        try (MasterServer server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 0);
             MasterClient client = new MasterClient("127.0.0.1:" + server.port(), Duration.ofSeconds(10))) {
            String forged = "x\"} 1\nstore_objects 999\n#";
            String node = client.register();
            // the master issues client ids, so a forged one is not this caller's: refused before it is validated
            refused(client, "evil\nEXPIRED victim", new SegmentSpec("seg", "engine-seg", "host", 4096, 1 << 20),
                    StoreError.ILLEGAL_CLIENT, "evil\\nEXPIRED victim");
            refused(client, node, new SegmentSpec(forged, "engine-seg", "host", 4096, 1 << 20), "segment id");
            refused(client, node, new SegmentSpec("seg", "engine seg", "host", 4096, 1 << 20), "engine segment name");
            refused(client, node, new SegmentSpec("seg", "engine-seg", "host\r", 4096, 1 << 20), "host");
            refused(client, "n".repeat(129), new SegmentSpec("seg", "engine-seg", "host", 4096, 1 << 20),
                    StoreError.ILLEGAL_CLIENT, "n".repeat(129));
            refused(client, node, new SegmentSpec("seg", "engine-seg", "", 4096, 1 << 20), "host");
            // a mount carries its client's incarnation; 0 is none (a peer that did not set the field)
            StoreException none = assertThrows(StoreException.class,
                    () -> client.mount(node, new SegmentSpec("seg", "engine-seg", "host", 4096, 1 << 20), 0));
            assertEquals(StoreError.INVALID_PARAMS, none.error(), none.getMessage());
            assertTrue(none.getMessage().contains("segment 'seg'") && none.getMessage().contains("no incarnation"),
                    none.getMessage());
            assertEquals(List.of(), server.master().segments(), "nothing was mounted");
            assertEquals(List.of(), server.master().state().clients(0), "no client was registered");

            client.mount(node, new SegmentSpec("seg", "10.0.0.1:15000", "10.0.0.1", 4096, 1 << 20), 1L);
            assertEquals(1, server.master().segments().size());
        }
    }

    private static void refused(MasterClient client, String clientId, SegmentSpec spec, String field) {
        refused(client, clientId, spec, StoreError.INVALID_PARAMS, field);
    }

    private static void refused(MasterClient client, String clientId, SegmentSpec spec, StoreError error, String field) {
        StoreException e = assertThrows(StoreException.class, () -> client.mount(clientId, spec, 1L));
        assertEquals(error, e.error(), e.getMessage());
        assertTrue(e.getMessage().contains(field), e.getMessage());
        assertTrue(e.getMessage().indexOf('\n') < 0 && e.getMessage().indexOf('\r') < 0, e.getMessage());
    }
}
