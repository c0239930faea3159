/**
 * A small ext4 file system of the run's own, loop-mounted, to break on
 * purpose: fill it up (a filler file takes every free block) or turn it
 * read-only the way a failing disk does (ext4's test hook raises an error,
 * and errors=remount-ro makes every later write fail with EROFS, also on
 * files already open). Needs root; `problem()` says why it cannot run here.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statfsSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { onCleanup } from './cleanup.js';
import { scratchDir } from './setup.js';

function sh(file: string, args: readonly string[]): { status: number | null; output: string } {
  const result = spawnSync(file, args, { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() || String(result.error ?? '') };
}

function must(file: string, args: readonly string[]): string {
  const result = sh(file, args);
  if (result.status !== 0) throw new Error(`${file} ${args.join(' ')} exited ${result.status}: ${result.output}`);
  return result.output;
}

export class LoopFs {
  readonly mount: string;
  private readonly image: string;
  private device = '';

  private constructor(dir: string, sizeMb: number) {
    this.image = join(dir, 'fs.img');
    this.mount = join(dir, 'mnt');
    mkdirSync(this.mount);
    writeFileSync(this.image, '');
    truncateSync(this.image, sizeMb * 1024 * 1024);
    // -m 0: no blocks reserved for root, or "full" would not be full for a root-owned server.
    must('mkfs.ext4', ['-q', '-F', '-m', '0', this.image]);
    this.attach();
  }

  /** Why this cannot run here, or undefined. */
  static problem(): string | undefined {
    if (process.getuid?.() !== 0) return 'needs root (loop mount)';
    for (const tool of ['mkfs.ext4', 'mount', 'e2fsck', 'findmnt']) if (sh('sh', ['-c', `command -v ${tool}`]).status !== 0) return `needs ${tool}`;
    return undefined;
  }

  static create(sizeMb: number): LoopFs {
    const fs = new LoopFs(scratchDir('loopfs'), sizeMb);
    // Registered after the directory's removal, so it runs first: unmount, then delete.
    onCleanup('loop file system', () => fs.detach());
    return fs;
  }

  freeBytes(): number {
    const s = statfsSync(this.mount);
    return s.bavail * s.bsize;
  }

  /** Take every free block; the bytes taken. */
  fill(): number {
    const filler = join(this.mount, 'filler');
    // The extent tree of the filler needs blocks too: leave it 1 MB, and let plain writes take the rest.
    must('fallocate', ['-l', String(Math.max(0, this.freeBytes() - 1024 * 1024)), filler]);
    const fd = openSync(join(this.mount, 'filler-tail'), 'w');
    try {
      // Smaller and smaller writes, down to the last byte a partial block can take.
      for (const size of [65536, 4096, 512, 1]) {
        const chunk = Buffer.alloc(size);
        try {
          for (;;) writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        }
      }
    } finally {
      closeSync(fd);
    }
    return statSync(filler).size + statSync(join(this.mount, 'filler-tail')).size;
  }

  /** Write everything cached to the disk, as time would (the kernel writes dirty pages back within ~30 s). */
  sync(): void {
    must('sync', ['-f', this.mount]);
  }

  unfill(): void {
    rmSync(join(this.mount, 'filler'), { force: true });
    rmSync(join(this.mount, 'filler-tail'), { force: true });
  }

  /** Make ext4 report an error: with errors=remount-ro it turns read-only at once. */
  breakToReadOnly(): void {
    writeFileSync(`/sys/fs/ext4/${basename(this.device)}/trigger_fs_error`, '1');
  }

  get readOnly(): boolean {
    const line = readFileSync('/proc/mounts', 'utf8').split('\n').find((l) => l.split(' ')[1] === this.mount);
    // After an error ext4 keeps reporting "rw" and adds "emergency_ro" (Linux 6.15+); older kernels switch to "ro".
    const options = line?.split(' ')[3]?.split(',') ?? [];
    return options.includes('ro') || options.includes('emergency_ro');
  }

  /** Unmount, repair with e2fsck (as after a real failure), mount again; e2fsck's exit code and last lines. */
  repair(): { status: number | null; output: string } {
    this.detach();
    const fsck = sh('e2fsck', ['-f', '-y', this.image]);
    this.attach();
    return { status: fsck.status, output: fsck.output.split('\n').slice(-2).join(' | ') };
  }

  private attach(): void {
    must('mount', ['-o', 'loop,errors=remount-ro', this.image, this.mount]);
    this.device = must('findmnt', ['-n', '-o', 'SOURCE', this.mount]);
  }

  private detach(): void {
    if (!this.device) return;
    // A server that is still running keeps the mount busy: detach it lazily rather than leave it behind.
    if (sh('umount', [this.mount]).status !== 0) {
      const lazy = sh('umount', ['-l', this.mount]);
      if (lazy.status !== 0) process.stderr.write(`could not unmount ${this.mount}: ${lazy.output}\n`);
    }
    this.device = '';
  }
}
