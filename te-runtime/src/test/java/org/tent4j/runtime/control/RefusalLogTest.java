package org.tent4j.runtime.control;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.atomic.LongAdder;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;

/** A refusal's log line quotes what a peer chose; a line break in it never starts a line of its own (issue 29). */
class RefusalLogTest {
    @Test
    void peerChosenTextIsLoggedOnOneLineAndOnlyAtPowersOfTwo() {
        LoggerContext ctx = new LoggerContext();
        Logger log = ctx.getLogger("refusals");
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.setContext(ctx);
        lines.start();
        log.addAppender(lines);
        LongAdder count = new LongAdder();
        for (int i = 0; i < 5; i++) {
            count.increment();
            RefusalLog.warnSometimes(log, count, "refusing '{}' from {}: {}", "peer\nWARN forged\r\u2028x\u0007", 42,
                    "why\tnot");
        }
        assertEquals(3, lines.list.size(), "the 1st, 2nd and 4th");
        assertEquals("refusing 'peer\\nWARN forged\\r\\x2028x\\x07' from 42: why\\tnot [1 so far]",
                lines.list.getFirst().getFormattedMessage());
    }
}
