package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.cli.store.NodeProcess.okString;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 28's mixed-size flood with real processes: a master and three client JVMs. One client wrote 4 KiB objects
 * and keeps reading every other one (so leased 4 KiB objects sit between never-read ones, the least recently leased
 * of all), while two others write 1 MiB objects until three times the store's capacity has been written. No put is
 * refused, every read that answers has the CRC its value was written with, and every 1 MiB object still held reads
 * back intact.
 */
@Timeout(120)
class MixedSizeFloodTest {
    private static final int SMALL = 4096;
    private static final int SMALL_COUNT = 512;
    private static final int LARGE = 1 << 20;
    private static final long SEGMENT = 4L << 20;
    private static final int WRITERS = 2;
    /** Three times the capacity of the three segments, split between the writers. */
    private static final int LARGE_PER_WRITER = (int) (3 * 3 * SEGMENT / LARGE / WRITERS);

    private final List<AutoCloseable> closeLater = new ArrayList<>();
    private MasterProcess master;

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closeLater.reversed()) {
            c.close();
        }
        if (master != null) {
            master.close();
        }
    }

    @Test
    void largePutsPastCapacityWhileSmallObjectsAreReadAreNeverRefused() throws Exception {
        master = new MasterProcess("--client-ttl", "10s", "--tick", "100ms");
        String address = master.address;
        NodeProcess.Node[] started = NodeProcess.Node.start(address, SEGMENT, 1 + WRITERS);
        closeLater.addAll(List.of(started));
        NodeProcess.Node reader = started[0];
        NodeProcess.Node[] writers = Arrays.copyOfRange(started, 1, 1 + WRITERS);
        String[] crcs = okString(reader.call("PUTBATCH small/ " + SMALL_COUNT + " " + SMALL + " 100 1")).split(",");
        assertEquals(SMALL_COUNT, crcs.length);

        ExecutorService pool = Executors.newFixedThreadPool(WRITERS + 1);
        try {
            AtomicBoolean writing = new AtomicBoolean(true);
            ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
            Future<Integer> reads = pool.submit(() -> {
                int read = 0;
                while (writing.get()) {
                    for (int i = 0; i < SMALL_COUNT && writing.get(); i += 2) {
                        String reply = reader.call("GET small/" + i);
                        if (reply.startsWith("OK ")) {
                            read++;
                            if (!reply.equals("OK " + crcs[i] + " " + SMALL)) {
                                wrong.add("small/" + i + ": " + reply);
                            }
                        } else if (!reply.startsWith("ERR OBJECT_NOT_FOUND")) {
                            wrong.add("small/" + i + ": " + reply);
                        }
                    }
                }
                return read;
            });
            List<Future<long[]>> writes = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                NodeProcess.Node node = writers[w];
                int writer = w;
                writes.add(pool.submit(() -> {
                    long[] written = new long[LARGE_PER_WRITER];
                    for (int i = 0; i < LARGE_PER_WRITER; i++) {
                        String reply = node.call("PUT large/" + writer + "/" + i + " " + LARGE + " " + (1000 * writer + i) + " 1");
                        assertTrue(reply.startsWith("OK "), "put " + i + " of writer " + writer + " refused: " + reply);
                        written[i] = Long.parseLong(reply.split(" ")[1]);
                    }
                    return written;
                }));
            }
            List<long[]> written = new ArrayList<>();
            try {
                for (Future<long[]> f : writes) {
                    written.add(f.get());
                }
            } finally {
                writing.set(false);
            }
            assertTrue(reads.get() > 0, "the reader read while the writers wrote");
            assertEquals(List.of(), List.copyOf(wrong), "reads that answered wrong bytes or failed otherwise");

            int held = 0;
            for (int w = 0; w < WRITERS; w++) {
                for (int i = 0; i < LARGE_PER_WRITER; i++) {
                    String reply = reader.call("GET large/" + w + "/" + i);
                    if (reply.startsWith("OK ")) {
                        held++;
                        assertEquals("OK " + written.get(w)[i] + " " + LARGE, reply, "large/" + w + "/" + i);
                    } else {
                        assertTrue(reply.startsWith("ERR OBJECT_NOT_FOUND"), "large/" + w + "/" + i + ": " + reply);
                    }
                }
            }
            assertTrue(held > 0, "the latest large objects are held");
        } finally {
            pool.shutdownNow();
        }
    }
}
