package org.tent4j.transport.tcp;

import java.util.Locale;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.transport.netty.KeepAlive;

/** Which Netty I/O engine the transport runs on: the event loop's handler and the matching channel classes. */
record IoMode(String name, IoHandlerFactory handlerFactory, Class<? extends SocketChannel> socketChannel,
              Class<? extends ServerSocketChannel> serverChannel, KeepAlive.Keys keepAliveKeys) {

    static final String OPTION = "transports.tcp.io_mode";

    /**
     * Resolves {@code io_mode}: {@code auto} takes epoll where it loads and NIO otherwise; a named mode that cannot
     * run here fails with TRANSPORT_UNAVAILABLE and Netty's cause rather than silently falling back.
     */
    static IoMode resolve(String configured) {
        String mode = configured.strip().toLowerCase(Locale.ROOT);
        return switch (mode) {
            case "auto" -> Epoll.isAvailable() ? epoll() : nio();
            case "epoll" -> {
                if (!Epoll.isAvailable()) {
                    throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, OPTION + "=epoll but epoll is "
                            + "unavailable: " + Epoll.unavailabilityCause(), Epoll.unavailabilityCause());
                }
                yield epoll();
            }
            case "io_uring" -> IoUringMode.create();
            case "nio" -> nio();
            default -> throw new ConfigException(OPTION, "expected auto, epoll, io_uring or nio, got '" + configured
                    + "'");
        };
    }

    /** What {@code auto} resolves to on this machine, without creating anything. */
    static String autoName() {
        return Epoll.isAvailable() ? "epoll" : "nio (epoll unavailable: " + Epoll.unavailabilityCause() + ")";
    }

    private static IoMode epoll() {
        return new IoMode("epoll", EpollIoHandler.newFactory(), EpollSocketChannel.class,
                EpollServerSocketChannel.class, new KeepAlive.Keys(EpollChannelOption.TCP_KEEPIDLE,
                        EpollChannelOption.TCP_KEEPINTVL, EpollChannelOption.TCP_KEEPCNT,
                        EpollChannelOption.TCP_USER_TIMEOUT));
    }

    private static IoMode nio() {
        return new IoMode("nio", NioIoHandler.newFactory(), NioSocketChannel.class, NioServerSocketChannel.class,
                KeepAlive.Keys.NIO);
    }

    /** Kept apart so that the io_uring classes load only when asked for. */
    private static final class IoUringMode {
        static IoMode create() {
            try {
                if (!io.netty.channel.uring.IoUring.isAvailable()) {
                    Throwable cause = io.netty.channel.uring.IoUring.unavailabilityCause();
                    throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, OPTION + "=io_uring but io_uring "
                            + "is unavailable: " + cause, cause);
                }
                return new IoMode("io_uring", io.netty.channel.uring.IoUringIoHandler.newFactory(),
                        io.netty.channel.uring.IoUringSocketChannel.class,
                        io.netty.channel.uring.IoUringServerSocketChannel.class, new KeepAlive.Keys(
                        io.netty.channel.uring.IoUringChannelOption.TCP_KEEPIDLE,
                        io.netty.channel.uring.IoUringChannelOption.TCP_KEEPINTVL,
                        io.netty.channel.uring.IoUringChannelOption.TCP_KEEPCNT,
                        io.netty.channel.uring.IoUringChannelOption.TCP_USER_TIMEOUT));
            } catch (LinkageError e) {
                throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, OPTION + "=io_uring but Netty's "
                        + "io_uring transport is not on the class path: " + e, e);
            }
        }
    }
}
