package org.tent4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.util.List;
import java.util.logging.LogManager;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * What gRPC logs through java.util.logging reaches the commands' logging (logback.xml) and nothing else: before, its
 * records went to JUL's own console handler, past logback's level for {@code io.grpc} and its one-line pattern.
 */
class JavaUtilLoggingTest {
    @Test
    void recordsOfJavaUtilLoggingGoToSlf4jOnly() {
        Tent4jCommand.routeJavaUtilLogging();
        Tent4jCommand.routeJavaUtilLogging(); // a second call changes nothing: still one handler
        java.util.logging.Handler[] handlers = LogManager.getLogManager().getLogger("").getHandlers();
        assertEquals(1, handlers.length, List.of(handlers).toString());
        assertInstanceOf(SLF4JBridgeHandler.class, handlers[0]);

        Logger grpc = (Logger) LoggerFactory.getLogger("io.grpc.netty.NettyServerStream");
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        grpc.addAppender(lines);
        Level before = grpc.getLevel();
        grpc.setLevel(Level.WARN); // as logback.xml sets io.grpc
        try {
            java.util.logging.Logger jul = java.util.logging.Logger.getLogger("io.grpc.netty.NettyServerStream");
            jul.info("Epoll available during static init");
            jul.warning("frame of 99999999 bytes refused");
            assertEquals(List.of("WARN frame of 99999999 bytes refused"),
                    lines.list.stream().map(e -> e.getLevel() + " " + e.getFormattedMessage()).toList());
        } finally {
            grpc.setLevel(before);
            grpc.detachAppender(lines);
        }
    }
}
