package org.tent4j.transport.tcp;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;

import io.netty.buffer.ByteBuf;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.WriteBufferWaterMark;

/**
 * What peers may make the target side hold, and how often they ran into it. Every count is logged where it happens;
 * these are the totals, for metrics and tests.
 */
final class InboundLimits {
    /**
     * The least an answer counts against {@code max_queued_bytes}: a READ of one byte still costs a header buffer, a
     * view and Netty's queue entry, so the queue is bounded in answers as well as in bytes.
     */
    static final int MIN_ANSWER_CHARGE = 4096;

    final int maxConnections;
    final Duration idleTimeout;
    final WriteBufferWaterMark waterMark;
    /** Charges each queued message at least {@link #MIN_ANSWER_CHARGE} against the water mark. */
    final MessageSizeEstimator answerCharge = () -> msg -> msg instanceof ByteBuf b
            ? Math.max(b.readableBytes(), MIN_ANSWER_CHARGE) : MIN_ANSWER_CHARGE;

    final LongAdder refusedConnections = new LongAdder();
    final LongAdder idleClosed = new LongAdder();
    final LongAdder authFailures = new LongAdder();
    final LongAdder violations = new LongAdder();
    private final LongAdder readPauses = new LongAdder();
    /** The most answers (header buffers) one connection had queued while it could not write. */
    private final LongAccumulator queuedPeak = new LongAccumulator(Math::max, 0);

    InboundLimits(int maxConnections, Duration idleTimeout, long maxQueuedBytes) {
        this.maxConnections = maxConnections;
        this.idleTimeout = idleTimeout;
        int high = (int) Math.min(Integer.MAX_VALUE, maxQueuedBytes);
        this.waterMark = new WriteBufferWaterMark(Math.max(1, high / 4), high);
    }

    /** A connection stopped reading requests because its peer does not read its answers. */
    void readPaused() {
        readPauses.increment();
        synchronized (this) {
            notifyAll();
        }
    }

    void queued(int answers) {
        queuedPeak.accumulate(answers);
    }

    long queuedPeak() {
        return queuedPeak.get();
    }

    long readPauses() {
        return readPauses.sum();
    }

    /** Waits (woken by each pause, not polling) until at least {@code n} pauses happened; whether they did. */
    synchronized boolean awaitReadPauses(long n, Duration patience) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        while (readPauses.sum() < n) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }
}
