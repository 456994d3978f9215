// The sbt build of the Scala shim, one supported Spark line per sbt load (as Delta's
// -DsparkVersion):
//
//   python tools/sbt.py -DsparkLine=3.5 -DscalaBinary=2.12 package
//     -> jvm-shim/target/sparkext-shim-spark3.5_2.12.jar     (`make jar-sbt LINE=3.5_2.12`)
//
// The lines are the table in sparkext/versions.py, which `make jar` / `make jars`
// (tools/build_jar.py) read too; this build asks that tool for the row (`--describe`), so the
// two builds cannot drift: the same source folders (common jvm-shim/src/main/scala, then the
// line's folders, a later folder's file shadowing an earlier one's of the same relative
// path), the same -release, the same Spark jars. Spark is "provided" and must be exactly the
// line's release, so the shim compiles against the jars of that release's pyspark sdist (or,
// for 3.5 / Scala 2.13, Maven Central), cached in ~/.cache/sparkext: Spark 4.3 and the
// newest patches are on PyPI but not on Maven Central.

def row(key: String): Map[String, String] = {
  val python = sys.env.getOrElse("PYTHON", ".venv/bin/python")
  val out = scala.sys.process.Process(Seq(python, "tools/build_jar.py", "--describe", key)).!!
  out.linesIterator.map(_.split("=", 2)).collect { case Array(k, v) => k -> v }.toMap
}

lazy val line: Map[String, String] = row(
  sys.props.getOrElse("sparkLine", "4.3") + "_" + sys.props.getOrElse("scalaBinary", "2.13"))

/** Later folders shadow earlier ones: one file per relative path. */
def shadowed(folders: Seq[File]): Seq[File] = folders.foldLeft(Map.empty[String, File]) { (chosen, dir) =>
  chosen ++ (dir ** "*.scala").get.map(f => IO.relativize(dir, f).get -> f)
}.values.toSeq.sortBy(_.getPath)

ThisBuild / scalaVersion := line("scala_version")
ThisBuild / organization := "io.sparkext"

lazy val shim = (project in file("jvm-shim"))
  .settings(
    name := "sparkext-shim",
    version := line("properties").split(";").head.stripPrefix("version="),
    Compile / unmanagedSourceDirectories := Nil,
    Compile / unmanagedSources := shadowed(line("sources").split(java.io.File.pathSeparator).map(file).toSeq),
    Compile / unmanagedJars ++= (file(line("spark_jars")) ** "*.jar").classpath,
    // The properties the handshake reads (tools/build_jar.py writes the same file).
    Compile / resourceGenerators += Def.task {
      val f = (Compile / resourceManaged).value / "io" / "sparkext" / "shim.properties"
      IO.write(f, line("properties").split(";").mkString("", "\n", "\n"))
      Seq(f)
    }.taskValue,
    scalacOptions ++= Seq("-deprecation", "-feature", "-release", line("release")),
    Compile / packageBin / artifactPath := target.value / line("jar"),
  )

lazy val root = (project in file("."))
  .aggregate(shim)
  .settings(publish / skip := true)
