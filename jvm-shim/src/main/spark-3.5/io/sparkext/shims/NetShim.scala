package io.sparkext.shims

import java.io.IOException
import java.net.{ProtocolFamily, SocketAddress, StandardProtocolFamily}
import java.nio.channels.SocketChannel

/**
 * Unix domain sockets arrived in Java 16, but the 3.5 jars target Java 8 (Spark 3.5
 * clusters still run it): reach them by reflection, so a Java 17 JVM uses them and an
 * older one says to use loopback TCP (`SPARKEXT_CHANNEL=tcp`).
 */
private[sparkext] object NetShim {
  private val unixClass: Option[Class[_]] =
    try Some(Class.forName("java.net.UnixDomainSocketAddress"))
    catch { case _: ClassNotFoundException => None }

  def unixAddress(path: String): SocketAddress = unixClass match {
    case Some(c) => c.getMethod("of", classOf[String]).invoke(null, path).asInstanceOf[SocketAddress]
    case None => throw new IOException(
      s"this JVM (Java ${System.getProperty("java.version")}) has no Unix domain sockets " +
        "(Java 16+): set SPARKEXT_CHANNEL=tcp for sparkext's loopback TCP channel")
  }

  def isUnix(address: SocketAddress): Boolean = unixClass.exists(_.isInstance(address))

  def open(unix: Boolean): SocketChannel =
    if (!unix) SocketChannel.open()
    else classOf[SocketChannel].getMethod("open", classOf[ProtocolFamily])
      .invoke(null, StandardProtocolFamily.valueOf("UNIX")).asInstanceOf[SocketChannel]
}
