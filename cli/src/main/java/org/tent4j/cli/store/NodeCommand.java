package org.tent4j.cli.store;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.TransferEngine;
import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tent4j store node}: a client service that contributes memory (and, with {@code --disk-dir}, a disk segment)
 * to the store and keeps them mounted (heartbeats, remount after a master restart) until killed. Prints
 * {@code DISK <segment id> <file> <index records dropped on reopening it>} for a disk segment, then {@code READY <client id> <segment id> <engine segment>}.
 * With a disk segment it scrubs it every {@code --scrub-interval} and serves {@code tent4j store scrub} on its control
 * socket ({@link NodeControl}).
 */
@Command(name = "node", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = {"Contributes memory (and a disk segment) to the store and keeps it mounted until killed.",
                "Prints 'DISK <segment id> <file> <records dropped>' with --disk-dir, then 'READY <client id> <segment id> <engine segment>'.",
                "With --disk-dir, 'tent4j store scrub --disk-dir DIR' asks it for a scrub of its disk (through the Unix socket "
                        + "DIR/" + NodeControl.SOCKET + ", its user's alone)."})
public final class NodeCommand implements Callable<Integer> {
    private static final Logger LOG = LoggerFactory.getLogger(NodeCommand.class);

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions connection;

    @Option(names = {"--segment-size", "--segment_size"}, defaultValue = "1g", converter = SizeConverter.class,
            paramLabel = "SIZE", description = "Memory contributed to the store. Default: ${DEFAULT-VALUE}.")
    long segmentSize;

    @Option(names = "--host", paramLabel = "NAME", description = "Locality name the master places replicas by.")
    String host;

    @Option(names = {"--disk-dir", "--disk_dir"}, paramLabel = "DIR",
            description = "Also contribute a disk segment: the file DIR/tent4j-store.disk (and its index beside it), "
                    + "registered with the engine, that the master offloads this node's evicted objects to. Both stay "
                    + "when the node stops; started again with the same DIR and size, the node reopens them and the "
                    + "master adopts the objects still intact. Default: none.")
    Path diskDir;

    @Option(names = {"--disk-size", "--disk_size"}, defaultValue = "10g", converter = SizeConverter.class,
            paramLabel = "SIZE", description = "Size of the disk segment (with --disk-dir). Default: ${DEFAULT-VALUE}.")
    long diskSize;

    @Option(names = {"--scrub-interval", "--scrub_interval"}, defaultValue = "0s", converter = DurationConverter.class,
            paramLabel = "DURATION", description = {"With --disk-dir, scrub the disk segment by itself: read every disk "
                    + "replica back, check it against its CRC32C, and have the master drop the corrupt ones; the next "
                    + "scrub starts this long after the last one ended. Summaries go to the log. 'tent4j store scrub "
                    + "--disk-dir DIR' asks for one at any time. Default: ${DEFAULT-VALUE} (only when asked)."})
    Duration scrubInterval;

    @Override
    public Integer call() throws InterruptedException {
        if (diskDir != null) {
            try {
                StoreClient.checkDiskDir(diskDir, diskSize); // before the engine starts: a bad flag costs nothing
            } catch (StoreException e) {
                spec.commandLine().getErr().println("tent4j store node: " + e.getMessage());
                return 2;
            }
        }
        TransferEngine engine = connection.engine();
        StoreClient node;
        SegmentSpec seg;
        try {
            StoreClient.Builder b = connection.client(engine);
            if (host != null) {
                b.host(host);
            }
            if (diskDir != null) {
                b.scrubInterval(scrubInterval);
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
        NodeControl control = null;
        if (diskDir != null) {
            try {
                SegmentSpec disk = node.contributeDisk(diskDir, diskSize);
                System.out.println("DISK " + disk.id() + " " + disk.file() + " " + node.diskRecordsDropped());
            } catch (StoreException e) {
                spec.commandLine().getErr().println("tent4j store node: " + e.getMessage());
                node.close();
                engine.close();
                return 2;
            }
            try {
                control = NodeControl.open(diskDir, node);
            } catch (IOException | RuntimeException e) {
                // the node serves its segments without it; only 'store scrub' cannot reach it
                LOG.warn("no control socket {} ({}): 'tent4j store scrub --disk-dir {}' cannot reach this node",
                        NodeControl.socket(diskDir), e.toString(), diskDir);
            }
        }
        NodeControl served = control;
        CountDownLatch stop = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (served != null) {
                served.close();
            }
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
