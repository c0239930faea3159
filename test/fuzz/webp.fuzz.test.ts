// The WebP part of the fuzz step (fuzz-format.ts).
import { fuzzFormat } from './fuzz-format.js';

fuzzFormat('webp');
