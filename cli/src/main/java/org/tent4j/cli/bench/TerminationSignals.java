package org.tent4j.cli.bench;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;

/**
 * Turns SIGINT and SIGTERM into a call of {@code onStop} instead of the JVM's default of running shutdown hooks and
 * exiting with status 128+signal: a target then closes its engine on the main thread and exits 0. A second signal
 * halts at once, in case closing hangs.
 *
 * <p>{@code sun.misc.Signal} (module jdk.unsupported) is reached by reflection so that the build stays free of
 * "internal proprietary API" warnings; where it is missing, the default behaviour remains and the caller's shutdown
 * hook still closes the engine.
 */
final class TerminationSignals {
    private TerminationSignals() {
    }

    /** Returns whether a handler was installed for at least one of the two signals. */
    static boolean install(Runnable onStop) {
        try {
            Class<?> signalClass = Class.forName("sun.misc.Signal");
            Class<?> handlerClass = Class.forName("sun.misc.SignalHandler");
            boolean[] seen = new boolean[1];
            InvocationHandler handler = (proxy, method, args) -> switch (method.getName()) {
                case "handle" -> {
                    synchronized (seen) {
                        if (seen[0]) {
                            Runtime.getRuntime().halt(130);
                        }
                        seen[0] = true;
                    }
                    onStop.run();
                    yield null;
                }
                case "hashCode" -> System.identityHashCode(proxy);
                case "equals" -> proxy == args[0];
                case "toString" -> "te-bench termination handler";
                default -> null;
            };
            Object proxy = Proxy.newProxyInstance(handlerClass.getClassLoader(), new Class<?>[]{handlerClass}, handler);
            var handle = signalClass.getMethod("handle", signalClass, handlerClass);
            var constructor = signalClass.getConstructor(String.class);
            boolean any = false;
            for (String name : new String[]{"INT", "TERM"}) {
                try {
                    handle.invoke(null, constructor.newInstance(name), proxy);
                    any = true;
                } catch (ReflectiveOperationException | RuntimeException e) {
                    // a signal the shell set to "ignore" (SIGINT of a background job) cannot be handled; keep the other
                }
            }
            return any;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return false;
        }
    }
}
