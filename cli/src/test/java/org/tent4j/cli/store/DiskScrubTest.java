package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.cli.Tent4jCommand;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.rpc.MasterServer;

import picocli.CommandLine;

/**
 * Scrubs of a node's disk segment on a real master with real engines: the periodic one ({@code --scrub-interval})
 * finds a byte flipped in the disk file by itself, and {@code tent4j store scrub --disk-dir} asks a running node for
 * one through its control socket and prints each mismatch by key, file and offset.
 */
class DiskScrubTest {
    private static final int VALUE = 128 << 10;
    private static final Duration LIMIT = Duration.ofSeconds(20);
    /** How often the test looks at the node's and the master's counters. */
    private static final Duration POLL = Duration.ofMillis(5);

    @TempDir
    Path dir;

    @Test
    void thePeriodicScrubFindsAFlippedByteWithinItsIntervalAndTheMasterDropsIt() throws Exception {
        Duration interval = Duration.ofMillis(300);
        try (Store s = new Store(dir, interval)) {
            String key = s.flipOneDiskObject();
            long deadline = System.nanoTime() + LIMIT.toNanos();
            while (s.node.scrubMismatches() == 0) { // the scrub runs by itself: nobody here asks for it
                assertTrue(System.nanoTime() < deadline, "no periodic scrub found the flipped byte within " + LIMIT
                        + " (interval " + interval + "); scrubs completed: " + s.node.scrubsCompleted());
                LockSupport.parkNanos(POLL.toNanos());
            }
            assertEquals(1, s.node.scrubMismatches());
            assertEquals(1, s.state().stats().tiering().scrubDropped(), "the master dropped the corrupt replica");
            StoreException gone = assertThrows(StoreException.class, () -> s.writer.get(key));
            assertEquals(StoreError.OBJECT_NOT_FOUND, gone.error(), gone.getMessage());
        }
    }

    @Test
    void theScrubCommandAsksTheRunningNodeAndPrintsEachMismatchByKeyFileAndOffset() throws Exception {
        try (Store s = new Store(dir, Duration.ZERO)) {
            Path socket = NodeControl.socket(s.diskDir);
            Files.writeString(socket, "left by a node killed earlier");
            try (NodeControl control = NodeControl.open(s.diskDir, s.node)) {
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
                ReplicaLocation r = s.replica(s.flipOneDiskObject());
                String key = s.flippedKey;

                String[] first = scrub(s.diskDir);
                assertEquals("1", first[0], first[1] + first[2]);
                String mismatch = "MISMATCH key '" + key + "' file " + r.file() + " offset " + r.fileOffset() + " length " + VALUE + ": ";
                assertTrue(first[1].startsWith(mismatch), first[1]);
                assertTrue(first[1].contains("have CRC32C"), first[1]);
                long onDisk = s.diskObjects();
                assertTrue(first[1].contains("SCRUB " + r.file() + ": " + (onDisk + 1) + " disk replicas checked, 1 corrupt, 1 dropped"),
                        first[1]);
                assertEquals(0, s.node.scrubMismatches() - 1, "one mismatch, counted once");
                StoreException gone = assertThrows(StoreException.class, () -> s.writer.get(key));
                assertEquals(StoreError.OBJECT_NOT_FOUND, gone.error(), gone.getMessage());

                String[] second = scrub(s.diskDir);
                assertEquals("0", second[0], second[1] + second[2]);
                assertEquals("SCRUB " + r.file() + ": " + onDisk + " disk replicas checked, 0 corrupt, 0 dropped\n", second[1]);

                // a request that is not one is answered naming it, and the node goes on serving
                try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
                    ch.connect(UnixDomainSocketAddress.of(socket));
                    ch.write(ByteBuffer.wrap("drop everything\n".getBytes(StandardCharsets.UTF_8)));
                    ByteBuffer answer = ByteBuffer.allocate(256);
                    while (ch.read(answer) >= 0) {
                        assertTrue(answer.hasRemaining());
                    }
                    assertEquals("ERROR unknown request 'drop everything': this node serves 'scrub'\n",
                            new String(answer.array(), 0, answer.position(), StandardCharsets.UTF_8));
                }
                assertEquals(2, s.node.scrubsCompleted());
            }
            assertTrue(Files.notExists(socket), "the socket goes with the node");
            String[] none = scrub(s.diskDir);
            assertEquals("2", none[0]);
            assertTrue(none[2].contains("no node serves " + s.diskDir + ": cannot connect to " + socket), none[2]);
        }
    }

    /** {exit status, stdout, stderr} of {@code tent4j store scrub --disk-dir dir}. */
    private static String[] scrub(Path diskDir) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Tent4jCommand.commandLine();
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int rc = cl.execute("store", "scrub", "--disk-dir", diskDir.toString());
        return new String[]{Integer.toString(rc), out.toString(), err.toString()};
    }

    /** A master, a node with 1 MiB of memory and a disk, and a writer whose 2 MiB of values overflow into the disk. */
    private static final class Store implements AutoCloseable {
        final MasterServer server;
        final TransferEngine nodeEngine;
        final TransferEngine writerEngine;
        final StoreClient node;
        final StoreClient writer;
        final Path diskDir;
        String flippedKey;

        Store(Path dir, Duration scrubInterval) throws Exception {
            server = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 20);
            String address = "127.0.0.1:" + server.port();
            nodeEngine = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
            writerEngine = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1")
                    .set("transports.enabled", "tcp").build());
            node = StoreClient.builder(nodeEngine, address).offloadPollInterval(Duration.ofMillis(5))
                    .scrubInterval(scrubInterval).stagingBytes(1 << 20).connect();
            node.contribute(1 << 20);
            diskDir = Files.createDirectory(dir.resolve("disk"));
            node.contributeDisk(diskDir, 8 << 20);
            writer = StoreClient.builder(writerEngine, address).reservationBytes(0).stagingBytes(1 << 20).connect();
        }

        MasterState state() {
            return server.master().state();
        }

        ReplicaLocation replica(String key) {
            return state().describe(server.master().now(), key).replicas().getFirst();
        }

        /** The values held on disk. */
        long diskObjects() {
            long now = server.master().now();
            return IntStream.range(0, 16).mapToObj(i -> state().describe(now, "scrub/" + i))
                    .filter(k -> k != null && k.replicas().getFirst().onDisk()).count();
        }

        /** Puts 16 values, waits until their offloads ended, and flips a byte of one on disk; returns its key. */
        String flipOneDiskObject() throws Exception {
            byte[] v = new byte[VALUE];
            for (int i = 0; i < 16; i++) {
                Arrays.fill(v, (byte) i);
                writer.put("scrub/" + i, v, ReplicateConfig.replicas(1));
            }
            long deadline = System.nanoTime() + LIMIT.toNanos();
            MasterState.Tiering t;
            while ((t = state().stats().tiering()).offloadsInFlight() > 0 || t.offloadsCompleted() == 0) {
                assertTrue(System.nanoTime() < deadline, "offloads did not settle: " + t);
                LockSupport.parkNanos(POLL.toNanos());
            }
            flippedKey = IntStream.range(0, 16).mapToObj(i -> "scrub/" + i).filter(k -> replica(k).onDisk()).findFirst()
                    .orElseThrow(() -> new AssertionError("no value was offloaded: " + state().stats()));
            ReplicaLocation r = replica(flippedKey);
            try (FileChannel ch = FileChannel.open(Path.of(r.file()), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ByteBuffer one = ByteBuffer.allocate(1);
                ch.read(one, r.fileOffset() + 100);
                ch.write(ByteBuffer.wrap(new byte[]{(byte) (one.get(0) ^ 0x01)}), r.fileOffset() + 100);
                ch.force(false);
            }
            return flippedKey;
        }

        @Override
        public void close() {
            writer.close();
            node.close();
            writerEngine.close();
            nodeEngine.close();
            server.close();
        }
    }
}
