package org.tent4j.cli.store;

import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.client.StoreClient;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tent4j store node}: a client service that contributes memory to the store and keeps it mounted (heartbeats,
 * remount after a master restart) until killed. Prints {@code READY <client id> <segment id> <engine segment>}.
 */
@Command(name = "node", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = {"Contributes memory to the store and keeps it mounted until killed.",
                "Prints 'READY <client id> <segment id> <engine segment>' once mounted."})
public final class NodeCommand implements Callable<Integer> {
    @Option(names = "--master", defaultValue = "127.0.0.1:50051", paramLabel = "HOST:PORT",
            description = "The store master's RPC address. Default: ${DEFAULT-VALUE}.")
    String master;

    @Option(names = {"--segment-size", "--segment_size"}, defaultValue = "1g", converter = SizeConverter.class,
            paramLabel = "SIZE", description = "Memory contributed to the store. Default: ${DEFAULT-VALUE}.")
    long segmentSize;

    @Option(names = {"--control-host", "--control_host"}, paramLabel = "ADDRESS",
            description = "The address peers reach this engine at (engine key control.host).")
    String controlHost;

    @Option(names = "--host", paramLabel = "NAME", description = "Locality name the master places replicas by.")
    String host;

    @Option(names = {"--client-id", "--client_id"}, paramLabel = "ID", description = "This client's id (default: a new one).")
    String clientId;

    @Override
    public Integer call() throws InterruptedException {
        EngineConfig.Builder cfg = EngineConfig.builder();
        if (controlHost != null) {
            cfg.set(EngineConfig.CONTROL_HOST, controlHost);
        }
        TransferEngine engine = TransferEngine.create(cfg.build());
        StoreClient.Builder b = StoreClient.builder(engine, master);
        if (host != null) {
            b.host(host);
        }
        if (clientId != null) {
            b.clientId(clientId);
        }
        StoreClient client = b.connect();
        SegmentSpec seg = client.contribute(segmentSize);
        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            client.close();
            engine.close();
            stop.countDown();
        }, "store-node-shutdown"));
        System.out.println("READY " + client.clientId() + " " + seg.id() + " " + seg.engineSegment());
        System.out.flush();
        stop.await();
        return 0;
    }
}
