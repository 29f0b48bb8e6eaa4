package org.tent4j.consumer;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.client.StoreClient;

public class StoreQuickstart {
    public static void main(String[] args) {
        try (TransferEngine engine = TransferEngine.create(EngineConfig.builder().build());
             StoreClient store = StoreClient.builder(engine, args[0]).connect()) {   // the master, e.g. 10.0.0.5:50051
            store.contribute(64 << 20);                     // lend 64 MiB of this process's memory to the store
            byte[] value = "the KV cache of layer 3".getBytes(StandardCharsets.UTF_8);
            store.put("layer-3", value);                    // answered once the bytes are in place
            if (!Arrays.equals(value, store.get("layer-3"))) {
                throw new IllegalStateException("read back other bytes");
            }
        }   // close() unmounts the memory this process lent (its objects go with it) and leaves the master cleanly
    }
}
