package org.tent4j.store.rpc;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class GrpcLogLimitTest {
    @Test
    void grpcsPerMessageRefusalWarningsAreLetThroughAtPowersOfTwoOnly() {
        GrpcLogLimit.install();
        Logger stream = Logger.getLogger("io.grpc.netty.NettyServerStream");
        List<LogRecord> published = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (isLoggable(r)) {
                    published.add(r);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        boolean parent = stream.getUseParentHandlers();
        stream.setUseParentHandlers(false);
        stream.addHandler(capture);
        try {
            long before = GrpcLogLimit.seen();
            for (int i = 0; i < 100; i++) {
                stream.log(Level.WARNING, "Exception processing message", new RuntimeException("over the budget"));
            }
            long expected = 0;
            for (long n = before + 1; n <= before + 100; n++) {
                expected += Long.bitCount(n) == 1 ? 1 : 0;
            }
            assertEquals(expected, published.size(), "warnings published of 100");
            stream.log(Level.FINE, "a debug line");
            assertEquals(expected, published.size(), "FINE is below the logger's level and not counted");
            assertEquals(before + 100, GrpcLogLimit.seen());
        } finally {
            stream.removeHandler(capture);
            stream.setUseParentHandlers(parent);
        }
    }
}
