package org.tent4j.cli.store;

import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

import org.tent4j.api.TransferEngine;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code tent4j store node}: a client service that contributes memory to the store and keeps it mounted (heartbeats,
 * remount after a master restart) until killed. Prints {@code READY <client id> <segment id> <engine segment>}.
 */
@Command(name = "node", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = {"Contributes memory to the store and keeps it mounted until killed.",
                "Prints 'READY <client id> <segment id> <engine segment>' once mounted."})
public final class NodeCommand implements Callable<Integer> {
    @Mixin
    ClientOptions connection;

    @Option(names = {"--segment-size", "--segment_size"}, defaultValue = "1g", converter = SizeConverter.class,
            paramLabel = "SIZE", description = "Memory contributed to the store. Default: ${DEFAULT-VALUE}.")
    long segmentSize;

    @Option(names = "--host", paramLabel = "NAME", description = "Locality name the master places replicas by.")
    String host;

    @Override
    public Integer call() throws InterruptedException {
        TransferEngine engine = connection.engine();
        StoreClient node;
        SegmentSpec seg;
        try {
            StoreClient.Builder b = connection.client(engine);
            if (host != null) {
                b.host(host);
            }
            node = b.connect();
            try {
                seg = node.contribute(segmentSize);
            } catch (StoreException e) {
                node.close();
                throw e;
            }
        } catch (StoreException | IllegalArgumentException e) {
            // the master refused or could not be reached (a missing token, a bad token file): one line, no trace
            engine.close();
            System.err.println("tent4j store node: " + e.getMessage());
            return 1;
        }
        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            node.close();
            engine.close();
            stop.countDown();
        }, "store-node-shutdown"));
        System.out.println("READY " + node.clientId() + " " + seg.id() + " " + seg.engineSegment());
        System.out.flush();
        stop.await();
        return 0;
    }
}
