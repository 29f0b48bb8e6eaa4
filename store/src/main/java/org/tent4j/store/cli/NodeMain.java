package org.tent4j.store.cli;

import java.util.Set;
import java.util.concurrent.CountDownLatch;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.client.StoreClient;

/**
 * {@code store-node}: a client service that contributes memory to the store and keeps it mounted (heartbeats,
 * remount after a master restart) until killed. Prints {@code READY <client id> <segment id> <engine segment>}.
 */
public final class NodeMain {
    private NodeMain() {
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = new Options(args, Set.of("master", "segment-size", "host", "control-host", "client-id"), Set.of("help"));
        } catch (IllegalArgumentException e) {
            System.err.println("store-node: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (o.flag("help")) {
            System.out.println("usage: store-node --master host:port [--segment-size 1g] [--control-host <ip peers reach>] [--host <locality name>] [--client-id id]");
            return;
        }
        EngineConfig.Builder cfg = EngineConfig.builder();
        if (o.string("control-host", null) != null) {
            cfg.set(EngineConfig.CONTROL_HOST, o.string("control-host", null));
        }
        TransferEngine engine = TransferEngine.create(cfg.build());
        StoreClient.Builder b = StoreClient.builder(engine, o.string("master", "127.0.0.1:50051"));
        if (o.string("host", null) != null) {
            b.host(o.string("host", null));
        }
        if (o.string("client-id", null) != null) {
            b.clientId(o.string("client-id", null));
        }
        StoreClient client = b.connect();
        SegmentSpec seg = client.contribute(o.size("segment-size", 1L << 30));
        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            client.close();
            engine.close();
            stop.countDown();
        }));
        System.out.println("READY " + client.clientId() + " " + seg.id() + " " + seg.engineSegment());
        System.out.flush();
        stop.await();
    }
}
