package org.tent4j.transport.tcp;

import java.util.concurrent.atomic.LongAdder;

/**
 * How payload bytes reached registered memory on receive: read by the kernel straight into it, or copied from an
 * ordinary read buffer they shared with a header. The ratio shows whether the zero-copy path is doing its job.
 */
final class PayloadCounters {
    final LongAdder landed = new LongAdder();
    final LongAdder copied = new LongAdder();
}
