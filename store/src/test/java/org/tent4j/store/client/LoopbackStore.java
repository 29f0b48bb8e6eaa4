package org.tent4j.store.client;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.StoreClock;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.rpc.MasterServer;

/** A master on loopback and the engines of its clients, in this JVM, closed together: the client tests' fixture. */
final class LoopbackStore implements AutoCloseable {
    private final MasterServer server;
    private final List<TransferEngine> engines = new ArrayList<>();

    private LoopbackStore(MasterServer server) {
        this.server = server;
    }

    static LoopbackStore start() throws IOException {
        return new LoopbackStore(MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 100));
    }

    /** A master on {@code clock} whose housekeeping never runs on its own: the test ticks it. */
    static LoopbackStore start(StoreClock clock) throws IOException {
        return new LoopbackStore(MasterServer.start(MasterConfig.defaults(), clock, "127.0.0.1", 0, 3_600_000));
    }

    /** As {@link #start(StoreClock)}, with {@code config}. */
    static LoopbackStore start(StoreClock clock, MasterConfig config) throws IOException {
        return new LoopbackStore(MasterServer.start(config, clock, "127.0.0.1", 0, 3_600_000));
    }

    MasterServer server() {
        return server;
    }

    String address() {
        return "127.0.0.1:" + server.port();
    }

    /** A fresh engine on loopback, closed with the store. */
    TransferEngine engine() {
        return engine(java.util.Map.of());
    }

    /** A fresh engine on loopback with these settings besides, closed with the store. */
    TransferEngine engine(java.util.Map<String, String> settings) {
        EngineConfig.Builder b = EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1");
        settings.forEach(b::set);
        TransferEngine e = TransferEngine.create(b.build());
        synchronized (engines) {
            engines.add(e);
        }
        return e;
    }

    /** A client on a fresh engine with a staging buffer of {@code stagingBytes}; the caller closes it. */
    StoreClient client(long stagingBytes) {
        return StoreClient.builder(engine(), address()).stagingBytes(stagingBytes).connect();
    }

    /** Closes the engines, then the master; close the clients first. */
    @Override
    public void close() {
        synchronized (engines) {
            engines.forEach(TransferEngine::close);
        }
        server.close();
    }
}
