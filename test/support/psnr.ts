/** PSNR of 8-bit pictures (peak 255), for the fingerprint's tests: the product's own (src/core/fingerprint/psnr.ts). */
export { meanSquaredError, psnr, psnrOfMse } from '../../src/core/fingerprint/psnr.js';
