package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.cli.Tent4jCommand;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.Wire;
import org.tent4j.testkit.ChildJvm;
import org.tent4j.testkit.Poll;

/**
 * A `store node` with a disk segment, SIGKILLed after a flood larger than its memory was offloaded, and started again
 * with the same disk dir: the master adopts what its disk index holds, and every offloaded object reads back (through
 * the node's tcp file serving) with its CRC32C intact, except the one whose index record was torn and the one whose
 * bytes were flipped on disk, which the node dropped and counted, and the one removed before the kill (its node
 * recorded the freed range as a tombstone).
 */
@Timeout(120)
class DiskRestartTest {
    private static final int VALUE = 256 * 1024;
    private static final int KEYS = 24; // 6 MiB into a 2 MiB memory segment
    /** Other JVMs' state, looked at through the master's metrics and the node's index file. */
    private static final Duration LIMIT = Duration.ofSeconds(30);
    private static final Duration PAUSE = Duration.ofMillis(20);

    @TempDir
    Path dir;
    private MasterProcess master;
    private ChildJvm node;

    @AfterEach
    void stop() throws Exception {
        if (node != null) {
            node.kill();
        }
        if (master != null) {
            master.close();
        }
    }

    @Test
    void aKilledNodeStartedAgainServesItsDiskObjectsAndDropsTornOrCorruptOnes() throws Exception {
        master = new MasterProcess("--client-ttl", "2s", "--tick", "50ms");
        String address = master.address;
        Path disk = Files.createDirectories(dir.resolve("disk"));
        String[] first = startNode(address, disk);
        assertEquals("0", first[3], "a fresh disk drops nothing");

        try (TransferEngine engine = TransferEngine.create(EngineConfig.builder()
                .set(EngineConfig.CONTROL_HOST, "127.0.0.1").set("transports.enabled", "tcp").build());
             StoreClient client = StoreClient.builder(engine, address).reservationBytes(0).stagingBytes(1 << 20).connect();
             MasterClient admin = new MasterClient(address, Duration.ofSeconds(10))) {
            // half the flood, then a disk-only object removed: the master hands its freed range to the node, which
            // records a tombstone; then the rest, so offloads are recorded after the tombstone
            Path index = disk.resolve("tent4j-store.disk.index");
            flood(client, master, 0, KEYS / 2, 4);
            String removed = diskOnly(admin, KEYS / 2).keySet().iterator().next();
            client.remove(removed, true); // the lease the listing took parks the range: forgotten at once all the same
            Poll.until("the node records the removal of " + removed, LIMIT, PAUSE, () -> !records(index).containsKey(removed));
            flood(client, master, KEYS / 2, KEYS, master.metric("store_offloads_completed_total") + 1);
            // what the master switched to disk (the node must have recorded each before it reported it)
            Map<String, Long> reported = diskOnly(admin, KEYS);
            assertTrue(reported.size() >= 4, "offloaded: " + reported);

            node.kill();
            node = null;
            // the master forgets the node's segments, and with them the disk-only objects
            String probe = reported.keySet().iterator().next();
            Poll.until("the killed node's client expires", LIMIT, PAUSE, () -> !present(admin, probe));
            Path file = disk.resolve("tent4j-store.disk");
            Map<String, Long> onDisk = records(index);
            for (Map.Entry<String, Long> e : reported.entrySet()) {
                assertEquals(e.getValue(), onDisk.get(e.getKey()), e.getKey() + ": the index holds every offload reported");
            }
            String torn = tearLastRecord(index);
            String flipped = onDisk.keySet().stream().filter(k -> !k.equals(torn)).findFirst().orElseThrow();
            flipByte(file, onDisk.get(flipped) + 100);

            String[] second = startNode(address, disk);
            assertEquals(first[2], second[2], "the same file");
            assertEquals("2", second[3], "the torn record and the flipped bytes are dropped and counted");
            onDisk.put(removed, -1L);
            for (Map.Entry<String, Long> e : onDisk.entrySet()) {
                String key = e.getKey();
                if (key.equals(torn) || key.equals(flipped) || key.equals(removed)) {
                    StoreException gone = assertThrows(StoreException.class, () -> client.get(key), key);
                    assertEquals(StoreError.OBJECT_NOT_FOUND, gone.error(), key + ": " + gone.getMessage());
                    continue;
                }
                byte[] v = client.get(key);
                assertArrayEquals(NodeProcess.value(VALUE, Integer.parseInt(key.substring(2))), v, key);
                List<ReplicaLocation> rs = Wire.replicas(admin.getReplicaList(key).getReplicasList());
                assertEquals(1, rs.size(), key + ": " + rs);
                assertTrue(rs.get(0).onDisk(), key + ": " + rs);
                assertEquals(e.getValue(), rs.get(0).fileOffset(), key + " at the offset it was offloaded to");
                assertEquals(NodeProcess.crc(v), rs.get(0).crc32c(), key + ": the CRC32C recorded at offload");
            }
            assertNotEquals(torn, flipped);
        }
    }

    /** Puts keys {@code from} to {@code to}, then waits until at least {@code offloads} completed and none is in flight. */
    private static void flood(StoreClient client, MasterProcess master, int from, int to, long offloads) throws Exception {
        for (int i = from; i < to; i++) {
            client.put("k/" + i, NodeProcess.value(VALUE, i), ReplicateConfig.replicas(1));
        }
        Poll.until("the offloads finish", LIMIT, PAUSE, () -> master.metric("store_offloads_completed_total") >= offloads
                && master.metric("store_offloads_in_flight") == 0);
    }

    /** The keys among the first {@code keys} whose only replica is on disk, with their offsets. */
    private static Map<String, Long> diskOnly(MasterClient admin, int keys) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < keys; i++) {
            if (!present(admin, "k/" + i)) {
                continue;
            }
            List<ReplicaLocation> rs = Wire.replicas(admin.getReplicaList("k/" + i).getReplicasList());
            if (rs.size() == 1 && rs.get(0).onDisk()) {
                out.put("k/" + i, rs.get(0).fileOffset());
            }
        }
        return out;
    }

    /** Starts `store node` on {@code disk}: the words of its DISK line (segment id, file, records dropped). */
    private String[] startNode(String address, Path disk) throws Exception {
        // only the transports it uses: probing the others costs seconds per start
        node = ChildJvm.builder(Tent4jCommand.class).commandPrefix(List.of("env", "TENT4J_TRANSPORTS_ENABLED=nvmeof,tcp"))
                .args("store", "node", "--master", address, "--control-host", "127.0.0.1", "--segment-size", "2m",
                        "--disk-dir", disk.toString(), "--disk-size", "32m").start();
        String[] line = node.awaitLine("DISK ", ChildJvm.DEFAULT_TIMEOUT).split(" ");
        node.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT);
        return line;
    }

    private static boolean present(MasterClient admin, String key) {
        try {
            admin.getReplicaList(key);
            return true;
        } catch (StoreException e) {
            assertEquals(StoreError.OBJECT_NOT_FOUND, e.error(), e.getMessage());
            return false;
        }
    }

    /**
     * The offloads an index records, key to offset (docs/STORE.md, "Disk tier": a 32-byte header, then records of
     * type, key length, key, offset, length, put id, CRC32C of the bytes and CRC32C of the record; a tombstone, type
     * 2, ends what lay in its range).
     */
    private static Map<String, Long> records(Path index) throws Exception {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(index));
        Map<String, Long> out = new LinkedHashMap<>();
        for (int pos = 32; pos + 3 <= b.limit(); ) {
            int keyLen = Short.toUnsignedInt(b.getShort(pos + 1));
            if (pos + 3 + keyLen + 32 > b.limit()) {
                break; // being appended
            }
            long offset = b.getLong(pos + 3 + keyLen);
            long length = b.getLong(pos + 3 + keyLen + 8);
            out.values().removeIf(o -> o >= offset && o < offset + Math.max(length, 1));
            if (b.get(pos) == 1) {
                out.put(new String(b.array(), pos + 3, keyLen, StandardCharsets.UTF_8), offset);
            }
            pos += 3 + keyLen + 28 + 4;
        }
        return out;
    }

    /**
     * Cuts the index in the middle of its last record (docs/STORE.md, "Disk tier": a 32-byte header, then records of
     * type, key length, key, offset, length, put id, CRC32C of the bytes and CRC32C of the record); its key.
     */
    private static String tearLastRecord(Path index) throws Exception {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(index));
        int pos = 32;
        int last = -1;
        String key = null;
        while (pos < b.limit()) {
            int keyLen = Short.toUnsignedInt(b.getShort(pos + 1));
            if (b.get(pos) == 1) {
                last = pos;
                key = new String(b.array(), pos + 3, keyLen, StandardCharsets.UTF_8);
            }
            pos += 3 + keyLen + 28 + 4;
        }
        assertEquals(b.limit(), pos, "the index ends on a record");
        assertTrue(last > 0 && pos - last > 10, "the last record is an offload");
        try (FileChannel ch = FileChannel.open(index, StandardOpenOption.WRITE)) {
            ch.truncate(pos - 6);
        }
        return key;
    }

    private static void flipByte(Path file, long offset) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, offset);
            one.put(0, (byte) ~one.get(0)).rewind();
            ch.write(one, offset);
        }
    }
}
