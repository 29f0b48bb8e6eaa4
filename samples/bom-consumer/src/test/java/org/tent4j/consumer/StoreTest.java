package org.tent4j.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.StoreClock;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.rpc.MasterServer;

/**
 * The store as a user embeds it, built against the BOM alone: a master in this process ({@code MasterServer}, as
 * docs/STORE.md says), the README's quickstart against it, and a value put by one client and read by another, so its
 * bytes cross from one engine to the other.
 */
class StoreTest {
    @Test
    void theReadmeQuickstartAndAPutGetBetweenTwoClientsRoundTripTheirBytes() throws Exception {
        try (MasterServer master = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 100)) {
            String address = "127.0.0.1:" + master.port();
            StoreQuickstart.main(new String[] {address});   // throws if it reads back other bytes

            byte[] value = new byte[1 << 20];
            new Random(26).nextBytes(value);
            try (TransferEngine lender = TransferEngine.create(EngineTransferTest.tcpOnly());
                 TransferEngine reader = TransferEngine.create(EngineTransferTest.tcpOnly());
                 StoreClient owner = StoreClient.builder(lender, address).connect();
                 StoreClient other = StoreClient.builder(reader, address).connect()) {
                owner.contribute(16 << 20);
                owner.put("consumer-value", value);
                byte[] got = other.get("consumer-value");
                assertEquals(value.length, got.length, "length of the value read by the other client");
                assertEquals(EngineTransferTest.crc(MemorySegment.ofArray(value)), EngineTransferTest.crc(MemorySegment.ofArray(got)),
                        "CRC32C of the value read by the other client");
            }
        }
    }
}
